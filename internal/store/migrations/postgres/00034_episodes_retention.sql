-- +goose Up
-- The recovery retention sweep (app/recoveryflow/retention.go): finished
-- episodes are found by their last change, oldest first, in short write
-- transactions, without reading every episode kept; and the row of an
-- alert issue is kept while an episode of its release is, which is looked
-- up per row.
CREATE INDEX episodes_updated ON episodes (updated_at);
CREATE INDEX episodes_release ON episodes (repository, release_id) WHERE release_id <> '';

-- +goose Down
DROP INDEX episodes_release;
DROP INDEX episodes_updated;
