-- +goose Up
-- GET /api/v1/releases?cluster= lists a cluster's releases newest first
-- (records.Store.List). It had no index: its page walked records_created
-- past every other cluster's records, through the whole table for a
-- cluster with few releases or none (a name mistyped, a cluster retired;
-- PERFORMANCE.md, session 18). In the list's order, a page reads its rows
-- and stops, as an app's and an environment's do (migration 00027).
CREATE INDEX records_cluster ON records (cluster, created_at DESC, release_id DESC);

-- +goose Down
DROP INDEX records_cluster;
