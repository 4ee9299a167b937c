-- +goose Up
-- Rollback releases whose pull request was closed without merging (the
-- release withdrawn) and then reopened by a person on GitHub, and that
-- hold their environment's one open rollback pull request again
-- (app/rollbackflow/claim.go): while the release stays withdrawn, its pull
-- request is not merged and a row is here, no other rollback of its app,
-- environment and cluster is opened. Closing the pull request again
-- deletes the row; merging it, or a fact naming the release, ends the
-- hold without deleting it. reopened_at is unix microseconds.
CREATE TABLE rollback_reopened (
    release_id  TEXT PRIMARY KEY,
    reopened_at BIGINT NOT NULL,
    reopened_by TEXT NOT NULL DEFAULT ''
);

-- +goose Down
DROP TABLE rollback_reopened;
