-- +goose Up
-- The release a rollback of mode pull-request or kubernetes opened for an
-- episode: its record, not a workflow run, says how the rollback ended, so
-- the episode is found from the record when that settles
-- (app/recoveryflow/outcome.go). '' for workflow rollbacks and for
-- episodes that did not roll back.
ALTER TABLE episodes ADD COLUMN rollback_release_id TEXT NOT NULL DEFAULT '';
CREATE INDEX episodes_rollback_release ON episodes (rollback_release_id) WHERE rollback_release_id <> '';

-- +goose Down
DROP INDEX episodes_rollback_release;
ALTER TABLE episodes DROP COLUMN rollback_release_id;
