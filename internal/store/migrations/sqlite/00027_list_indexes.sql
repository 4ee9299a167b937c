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

-- The hourly deliveries sweep looks for deliveries stranded in the queue
-- (queued, attempted, no retry job left; app/deliveries_sweep.go). With no
-- index it walked every delivery kept, oldest first, for the few queued
-- after an attempt. This one holds exactly those rows, like
-- deliveries_to_drain the ones never attempted.
CREATE INDEX deliveries_retrying ON deliveries (received_at, id) WHERE state = 'queued' AND attempts > 0;

-- +goose Down
DROP INDEX deliveries_retrying;
DROP INDEX records_environment;
DROP INDEX records_app;
