-- +goose Up
-- ReleaseRecords (records/record.go). Times are unix microseconds; a NULL
-- time is one that has not happened yet.
CREATE TABLE records (
    release_id       TEXT PRIMARY KEY,
    app              TEXT NOT NULL,
    environment      TEXT NOT NULL,
    cluster          TEXT NOT NULL DEFAULT '',
    repository       TEXT NOT NULL DEFAULT '',
    kind             TEXT NOT NULL,
    rollback_of      TEXT NOT NULL DEFAULT '',
    rollback_reason  TEXT NOT NULL DEFAULT '',
    image            TEXT NOT NULL DEFAULT '',
    digest           TEXT NOT NULL DEFAULT '',
    git_revision     TEXT NOT NULL DEFAULT '',
    config_revision  TEXT NOT NULL DEFAULT '',
    pr_url           TEXT NOT NULL DEFAULT '',
    pr_number        BIGINT NOT NULL DEFAULT 0,
    flow_started_at  BIGINT,
    state            TEXT NOT NULL,
    healthy_at       BIGINT,
    rolled_back_by   TEXT NOT NULL DEFAULT '',
    last_fact_at     BIGINT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    stall_alerted_at BIGINT                     -- set once: one stall alert per record
);
-- Eligibility and the reducer's siblings read one target's newest records.
CREATE INDEX records_target ON records (app, environment, cluster, created_at DESC, release_id DESC);
CREATE INDEX records_created ON records (created_at DESC, release_id DESC);
CREATE INDEX records_state ON records (state, created_at DESC);
-- The open records of a target: few, whatever the target's history.
CREATE INDEX records_open ON records (app, environment, cluster) WHERE state NOT IN ('superseded', 'rolled-back');

-- Facts kept by id, so a repeated fact is a duplicate.
CREATE TABLE facts (
    id          TEXT PRIMARY KEY,                -- records.Fact.ID()
    release_id  TEXT NOT NULL DEFAULT '',
    source      TEXT NOT NULL,
    received_at BIGINT NOT NULL,
    body        JSONB NOT NULL                   -- the fact as JSON
);
CREATE INDEX facts_release ON facts (release_id);

-- The last thing seen on each workload, keyed cluster/namespace/name.
CREATE TABLE observations (
    key         TEXT PRIMARY KEY,
    release_id  TEXT NOT NULL DEFAULT '',
    observed_at BIGINT NOT NULL,
    body        JSONB NOT NULL                   -- records.Observation as JSON
);

-- Audit events outlive records: drift and stall events may have none.
CREATE TABLE audit_events (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    type        TEXT NOT NULL,
    release_id  TEXT NOT NULL DEFAULT '',
    delivery_id TEXT NOT NULL DEFAULT '',
    fact_id     TEXT NOT NULL DEFAULT '',
    at          BIGINT NOT NULL,
    message     TEXT NOT NULL DEFAULT '',
    data        JSONB                            -- JSON object, NULL when empty
);
CREATE INDEX audit_events_release ON audit_events (release_id, at, id);
CREATE INDEX audit_events_type ON audit_events (type, at, id);
CREATE INDEX audit_events_delivery ON audit_events (delivery_id, at, id);
CREATE INDEX audit_events_at ON audit_events (at, id);

-- +goose Down
DROP TABLE audit_events;
DROP TABLE observations;
DROP TABLE facts;
DROP TABLE records;
