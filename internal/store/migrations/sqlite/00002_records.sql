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
    pr_number        INTEGER NOT NULL DEFAULT 0,
    flow_started_at  INTEGER,
    state            TEXT NOT NULL,
    healthy_at       INTEGER,
    rolled_back_by   TEXT NOT NULL DEFAULT '',
    last_fact_at     INTEGER,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    stall_alerted_at INTEGER                     -- set once: one stall alert per record
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
    received_at INTEGER NOT NULL,
    body        TEXT NOT NULL                    -- the fact as JSON
);
CREATE INDEX facts_release ON facts (release_id);

-- The last thing seen on each workload, keyed cluster/namespace/name.
CREATE TABLE observations (
    key         TEXT PRIMARY KEY,
    release_id  TEXT NOT NULL DEFAULT '',
    observed_at INTEGER NOT NULL,
    body        TEXT NOT NULL                    -- records.Observation as JSON
);

-- Audit events outlive records: drift and stall events may have none.
CREATE TABLE audit_events (
    id          INTEGER PRIMARY KEY,
    type        TEXT NOT NULL,
    release_id  TEXT NOT NULL DEFAULT '',
    delivery_id TEXT NOT NULL DEFAULT '',
    fact_id     TEXT NOT NULL DEFAULT '',
    at          INTEGER NOT NULL,
    message     TEXT NOT NULL DEFAULT '',
    data        TEXT                             -- JSON object, NULL when empty
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
