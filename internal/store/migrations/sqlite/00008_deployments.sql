-- +goose Up
-- GitHub deployments kept in step with release records (app/deployments):
-- one row per release. Times are unix microseconds.
CREATE TABLE deployments (
    release_id    TEXT PRIMARY KEY REFERENCES records (release_id) ON DELETE CASCADE,
    repository    TEXT NOT NULL DEFAULT '',     -- owner/name the deployment lives in
    deployment_id INTEGER NOT NULL DEFAULT 0,   -- GitHub's id; 0 until it is created
    create_sent   INTEGER NOT NULL DEFAULT 0,   -- a create went out whose answer may be lost
    state         TEXT NOT NULL DEFAULT '',     -- the last status GitHub confirmed
    pending_state TEXT NOT NULL DEFAULT '',     -- a status sent whose answer may be lost
    skipped       TEXT NOT NULL DEFAULT '',     -- why no deployment is kept; empty when one is
    lease_job     INTEGER NOT NULL DEFAULT 0,   -- the job writing to GitHub for this release
    lease_until   INTEGER NOT NULL DEFAULT 0,
    updated_at    INTEGER NOT NULL
);

-- +goose Down
DROP TABLE deployments;
