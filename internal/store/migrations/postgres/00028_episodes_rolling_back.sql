-- +goose Up
-- The episodes rolling a release back: a second failed run of the same
-- release finds the rollback under way through it and skips its own
-- (app/recoveryflow/once.go), without reading every episode kept.
CREATE INDEX episodes_rolling_back ON episodes (release_id) WHERE state = 'rolling_back';

-- +goose Down
DROP INDEX episodes_rolling_back;
