-- +goose Up
-- The check-run jobs of a rollout can run side by side (each move queues
-- one). The job that creates the rollout's check run, the first or one that
-- replaces a completed run, claims the creation here first: without the
-- claim two jobs each created a run, and the one not stored stayed in
-- progress for good (app/rolloutflow/check.go). 0: nobody creates one.
ALTER TABLE rollouts ADD COLUMN check_claim BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE rollouts DROP COLUMN check_claim;
