-- +goose Up
-- No query reads deliveries by repository; each delivery paid for one more
-- index entry.
DROP INDEX deliveries_repository;
-- SQLite moved delivery payloads to a table of their own in this version,
-- because it rewrites a whole row, body included, on every UPDATE.
-- PostgreSQL keeps a payload over 2 kB in TOAST storage, which an UPDATE
-- that does not change it carries over without copying, so its payloads
-- stay where they are.

-- +goose Down
CREATE INDEX deliveries_repository ON deliveries (repository, received_at DESC);
