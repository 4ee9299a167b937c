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
    installation_id BIGINT NOT NULL,
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
    wake_at         BIGINT NOT NULL DEFAULT 0, -- when the next tick is scheduled
    check_run_id    BIGINT NOT NULL DEFAULT 0,
    seq             BIGINT NOT NULL DEFAULT 0, -- optimistic lock of machine
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);

CREATE TABLE rollout_batches (
    rollout_id    TEXT NOT NULL REFERENCES rollouts (id) ON DELETE CASCADE,
    kind          TEXT NOT NULL,                -- prepare | deploy | rollback
    stage         BIGINT NOT NULL,
    pass          BIGINT NOT NULL,
    batch         BIGINT NOT NULL,
    name          TEXT NOT NULL,
    ord           BIGINT NOT NULL,             -- order of dispatch
    run_id        BIGINT NOT NULL DEFAULT 0,
    state         TEXT NOT NULL,                -- dispatching | queued | in_progress | success | failure
    detail        TEXT NOT NULL DEFAULT '',
    dispatched_at BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    PRIMARY KEY (rollout_id, kind, stage, pass, batch)
);
CREATE INDEX rollout_batches_run ON rollout_batches (run_id) WHERE run_id <> 0;

CREATE TABLE rollout_readings (
    rollout_id TEXT NOT NULL REFERENCES rollouts (id) ON DELETE CASCADE,
    stage      BIGINT NOT NULL,
    pass       BIGINT NOT NULL,                -- -1: the stage's gate
    batch      BIGINT NOT NULL,                -- -1: the stage's gate
    n          BIGINT NOT NULL,
    at         BIGINT NOT NULL,
    green      BOOLEAN NOT NULL,
    reasons    TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (rollout_id, stage, pass, batch, n)
);

CREATE TABLE rollout_approvals (
    rollout_id TEXT NOT NULL REFERENCES rollouts (id) ON DELETE CASCADE,
    stage      BIGINT NOT NULL,
    login      TEXT NOT NULL,
    approve    BOOLEAN NOT NULL,                -- false: a rejection
    comment    TEXT NOT NULL DEFAULT '',
    at         BIGINT NOT NULL,
    PRIMARY KEY (rollout_id, stage, login)
);

CREATE TABLE rollout_audit (
    rollout_id TEXT NOT NULL REFERENCES rollouts (id) ON DELETE CASCADE,
    n          BIGINT NOT NULL,
    at         BIGINT NOT NULL,
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
