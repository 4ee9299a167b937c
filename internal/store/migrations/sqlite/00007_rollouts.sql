-- +goose Up
-- Rollouts in waves (app/rolloutflow, seed 001): one rollout per release, the
-- plan it runs as it was when it started, and where its state machine stands.
-- Every batch the executor dispatches has a row before the dispatch leaves, so
-- no batch is dispatched twice; readings and approvals are kept so that a
-- restart neither repeats the bake already spent nor forgets a vote. Times are
-- unix microseconds.
CREATE TABLE rollouts (
    id              TEXT PRIMARY KEY,
    release_id      TEXT NOT NULL UNIQUE,
    repository      TEXT NOT NULL,
    installation_id INTEGER NOT NULL,
    app             TEXT NOT NULL,
    environment     TEXT NOT NULL,
    version         TEXT NOT NULL,
    previous        TEXT NOT NULL DEFAULT '',   -- version rollbacks dispatch
    author          TEXT NOT NULL DEFAULT '',   -- opened or merged the release: may not approve it
    head_sha        TEXT NOT NULL DEFAULT '',   -- where the ripcord/rollout check run goes
    snapshot        TEXT NOT NULL,              -- plan and settings as JSON
    machine         TEXT NOT NULL,              -- the state machine as JSON
    status          TEXT NOT NULL,              -- running | paused-approval | paused-freeze | succeeded | failed
    abort_by        TEXT NOT NULL DEFAULT '',
    abort_reason    TEXT NOT NULL DEFAULT '',
    wake_at         INTEGER NOT NULL DEFAULT 0, -- when the next tick is scheduled
    check_run_id    INTEGER NOT NULL DEFAULT 0,
    seq             INTEGER NOT NULL DEFAULT 0, -- optimistic lock of machine
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);

CREATE TABLE rollout_batches (
    rollout_id    TEXT NOT NULL REFERENCES rollouts (id) ON DELETE CASCADE,
    kind          TEXT NOT NULL,                -- prepare | deploy | rollback
    stage         INTEGER NOT NULL,
    pass          INTEGER NOT NULL,
    batch         INTEGER NOT NULL,
    name          TEXT NOT NULL,
    ord           INTEGER NOT NULL,             -- order of dispatch
    run_id        INTEGER NOT NULL DEFAULT 0,
    state         TEXT NOT NULL,                -- dispatching | queued | in_progress | success | failure
    detail        TEXT NOT NULL DEFAULT '',
    dispatched_at INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    PRIMARY KEY (rollout_id, kind, stage, pass, batch)
);
CREATE INDEX rollout_batches_run ON rollout_batches (run_id) WHERE run_id <> 0;

CREATE TABLE rollout_readings (
    rollout_id TEXT NOT NULL REFERENCES rollouts (id) ON DELETE CASCADE,
    stage      INTEGER NOT NULL,
    pass       INTEGER NOT NULL,                -- -1: the stage's gate
    batch      INTEGER NOT NULL,                -- -1: the stage's gate
    n          INTEGER NOT NULL,
    at         INTEGER NOT NULL,
    green      BOOLEAN NOT NULL,
    reasons    TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (rollout_id, stage, pass, batch, n)
);

CREATE TABLE rollout_approvals (
    rollout_id TEXT NOT NULL REFERENCES rollouts (id) ON DELETE CASCADE,
    stage      INTEGER NOT NULL,
    login      TEXT NOT NULL,
    approve    BOOLEAN NOT NULL,                -- false: a rejection
    comment    TEXT NOT NULL DEFAULT '',
    at         INTEGER NOT NULL,
    PRIMARY KEY (rollout_id, stage, login)
);

CREATE TABLE rollout_audit (
    rollout_id TEXT NOT NULL REFERENCES rollouts (id) ON DELETE CASCADE,
    n          INTEGER NOT NULL,
    at         INTEGER NOT NULL,
    type       TEXT NOT NULL,
    message    TEXT NOT NULL,
    PRIMARY KEY (rollout_id, n)
);

-- +goose Down
DROP TABLE rollout_audit;
DROP TABLE rollout_approvals;
DROP TABLE rollout_readings;
DROP INDEX rollout_batches_run;
DROP TABLE rollout_batches;
DROP TABLE rollouts;
