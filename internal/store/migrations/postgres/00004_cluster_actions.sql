-- +goose Up
-- Cluster actions (app/clusteractions): what the server asks a cluster's
-- agent to do. The agent pulls them (the server never connects into a
-- cluster), the server marks each claimed by one agent, and the agent reports
-- how it ended. Times are unix microseconds.
CREATE TABLE cluster_actions (
    id          TEXT PRIMARY KEY,
    cluster     TEXT NOT NULL,
    action_key  TEXT NOT NULL,                -- idempotency key of Enqueue
    kind        TEXT NOT NULL,
    spec        TEXT NOT NULL,                -- actionapi.Action as JSON
    release_id  TEXT NOT NULL DEFAULT '',
    rollback_of TEXT NOT NULL DEFAULT '',
    state       TEXT NOT NULL,                -- pending | claimed | done | failed
    agent       TEXT NOT NULL DEFAULT '',     -- the agent that claimed it
    result      TEXT NOT NULL DEFAULT '',     -- actionapi.Result as JSON
    created_at  BIGINT NOT NULL,
    claimed_at  BIGINT NOT NULL DEFAULT 0,
    finished_at BIGINT NOT NULL DEFAULT 0,
    UNIQUE (cluster, action_key)
);
CREATE INDEX cluster_actions_open ON cluster_actions (cluster, state, created_at) WHERE state IN ('pending', 'claimed');

-- +goose Down
DROP INDEX cluster_actions_open;
DROP TABLE cluster_actions;
