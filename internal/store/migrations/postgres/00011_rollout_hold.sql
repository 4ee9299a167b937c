-- +goose Up
-- A rollout queued behind one that failed after deploying is held: it does
-- not start when the queue clears, because it was merged on top of the
-- release that failed and may carry the same fault. hold says why; a
-- person lifts it (approve) or aborts the rollout (app/rolloutflow,
-- paused-hold). It is a column, not part of the machine, because the
-- rollout that fails sets it on the rollouts behind, as abort_by is set.
ALTER TABLE rollouts ADD COLUMN hold TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE rollouts DROP COLUMN hold;
