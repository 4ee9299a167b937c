-- +goose Up
-- Recovery episodes (app/recoveryflow): one per failed workflow run.
-- Times are unix microseconds; JSON columns hold the decision and what it rested on.
CREATE TABLE episodes (
    repository      TEXT NOT NULL,
    run_id          INTEGER NOT NULL,
    installation_id INTEGER NOT NULL DEFAULT 0,
    workflow        TEXT NOT NULL DEFAULT '',
    head_sha        TEXT NOT NULL DEFAULT '',
    app             TEXT NOT NULL DEFAULT '',
    environment     TEXT NOT NULL DEFAULT '',
    cluster         TEXT NOT NULL DEFAULT '',
    release_id      TEXT NOT NULL DEFAULT '',   -- the failed release, '' when unknown
    run_attempt     INTEGER NOT NULL,           -- newest attempt handled
    retry_count     INTEGER NOT NULL,
    state           TEXT NOT NULL,
    decision        TEXT NOT NULL,              -- recovery.Decision as JSON
    context         TEXT NOT NULL,              -- what it rested on, as JSON
    check_run_id    INTEGER NOT NULL DEFAULT 0,
    check_claim     INTEGER NOT NULL DEFAULT 0, -- the job creating the check run
    next_retry_at   INTEGER,
    rollback_run_id INTEGER NOT NULL DEFAULT 0,
    seq             INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    PRIMARY KEY (repository, run_id)
);
CREATE INDEX episodes_rollback_run ON episodes (repository, rollback_run_id) WHERE rollback_run_id <> 0;

-- One alert issue per release (or per run when the release is unknown).
CREATE TABLE recovery_issues (
    repository   TEXT NOT NULL,
    alert_key    TEXT NOT NULL,
    issue_number INTEGER NOT NULL DEFAULT 0,
    claim        INTEGER NOT NULL DEFAULT 0,    -- the job creating the issue
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (repository, alert_key)
);

-- The task facts of one workflow run, read when the run fails.
CREATE INDEX facts_task_run ON facts (json_extract(body, '$.workflow_run_id')) WHERE source = 'task';

-- +goose Down
DROP INDEX facts_task_run;
DROP TABLE recovery_issues;
DROP TABLE episodes;
