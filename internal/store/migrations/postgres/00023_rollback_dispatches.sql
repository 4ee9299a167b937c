-- +goose Up
-- The workflow rollbacks recovery dispatched (app/recoveryflow/rollback.go),
-- one per decided failure (episode and attempt), kept after the episode
-- moves on: a later failure of the deploy (a person re-ran it) gives the
-- episode a new decision, and without this the earlier rollback's run,
-- a run of a deploy workflow too, would be taken for a failed deploy and
-- retried. run_id is 0 while GitHub has not named the run; dispatched_at
-- (unix microseconds) bounds which runs can be it then.
CREATE TABLE rollback_dispatches (
    episode_repository TEXT NOT NULL,
    episode_run_id     BIGINT NOT NULL,
    attempt            INTEGER NOT NULL,
    repository         TEXT NOT NULL,  -- where the rollback workflow runs
    workflow           TEXT NOT NULL,  -- its file name
    run_id             BIGINT NOT NULL DEFAULT 0,
    dispatched_at      BIGINT NOT NULL,
    PRIMARY KEY (episode_repository, episode_run_id, attempt)
);
CREATE INDEX rollback_dispatches_run ON rollback_dispatches (repository, run_id);

-- +goose Down
DROP TABLE rollback_dispatches;
