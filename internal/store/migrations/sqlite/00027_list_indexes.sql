-- +goose Up
-- GET /api/v1/releases?app= and ?environment= list newest first, and so
-- do the app's records the eligibility API, the gates and a release's page
-- read (records.Store.List). records_target starts with the app but then
-- orders by environment and cluster, so a page of an app sorted all its
-- records, and an environment had no index: its page walked
-- records_created, past every other environment's records, through the
-- whole table when the environment had few (PERFORMANCE.md, session 18).
-- In the list's order, a page reads its rows and stops.
CREATE INDEX records_app ON records (app, created_at DESC, release_id DESC);
CREATE INDEX records_environment ON records (environment, created_at DESC, release_id DESC);

-- +goose Down
DROP INDEX records_environment;
DROP INDEX records_app;
