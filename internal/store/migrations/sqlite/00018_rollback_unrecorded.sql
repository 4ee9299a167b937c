-- +goose Up
-- Rollback pull requests opened on GitHub whose release could not be
-- stored by the job's last attempt (app/rollbackflow/job.go): no record
-- says the pull request is open, so this row holds its app, environment
-- and cluster's one open rollback pull request instead
-- (app/rollbackflow/claim.go), and a rollback to another target is
-- refused naming it. The row is deleted when the pull request is closed
-- or merged (the webhook, or GitHub asked when ripcord missed it), or
-- when a later job stores the release with it. created_at is unix
-- microseconds.
CREATE TABLE rollback_unrecorded (
    pr_url       TEXT PRIMARY KEY,
    release_id   TEXT NOT NULL,
    app          TEXT NOT NULL,
    environment  TEXT NOT NULL,
    cluster      TEXT NOT NULL,
    pr_number    BIGINT NOT NULL,
    git_revision TEXT NOT NULL DEFAULT '',
    created_at   BIGINT NOT NULL
);
CREATE INDEX rollback_unrecorded_target ON rollback_unrecorded (app, environment, cluster);

-- +goose Down
DROP TABLE rollback_unrecorded;
