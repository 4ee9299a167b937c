-- +goose Up
-- No query reads deliveries by repository; each delivery paid for one more
-- index entry.
DROP INDEX deliveries_repository;
-- SQLite moved delivery payloads to a table of their own in this version,
-- because it rewrites a whole row, body included, on every UPDATE.
-- PostgreSQL keeps a payload over 2 kB in TOAST storage, which an UPDATE
-- that does not change it carries over without copying, so its payloads
-- stay where they are. New payloads are compressed with lz4 rather than
-- pglz, which took the database server several times the CPU for a 12 kB
-- payload; a server built without lz4 keeps pglz.
-- +goose StatementBegin
DO $$
BEGIN
    ALTER TABLE deliveries ALTER COLUMN body SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'lz4 is not available: delivery payloads stay compressed with pglz';
END $$;
-- +goose StatementEnd

-- +goose Down
ALTER TABLE deliveries ALTER COLUMN body SET COMPRESSION default;
CREATE INDEX deliveries_repository ON deliveries (repository, received_at DESC);
