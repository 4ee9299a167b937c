-- +goose Up
-- The job that creates a release's ripcord/release check run claims the
-- creation here first (app/rollbackflow/release_check.go). Each change of
-- the release queues a job, and River runs them side by side: two that
-- both found no run on GitHub each created one, and the one not found
-- again stayed as first written (an in-progress spinner) for good. A
-- claim of a job River is done with is taken over. The row goes with its
-- release (records' sweep).
CREATE TABLE release_check_claims (
    release_id TEXT PRIMARY KEY,
    claim      INTEGER NOT NULL
);

-- +goose Down
DROP TABLE release_check_claims;
