-- +goose Up
CREATE TABLE deliveries (
    id              TEXT PRIMARY KEY,            -- X-GitHub-Delivery
    event           TEXT NOT NULL,
    action          TEXT NOT NULL DEFAULT '',
    installation_id INTEGER NOT NULL DEFAULT 0,
    repository      TEXT NOT NULL DEFAULT '',
    body            BLOB NOT NULL,
    received_at     INTEGER NOT NULL,            -- unix microseconds
    state           TEXT NOT NULL DEFAULT 'queued',
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT '',
    processed_at    INTEGER,
    processed_count INTEGER NOT NULL DEFAULT 0   -- how many times work completed; 1 is the only right answer
);
CREATE INDEX deliveries_received_at ON deliveries (received_at DESC, id);
CREATE INDEX deliveries_repository ON deliveries (repository, received_at DESC);

CREATE TABLE installations (
    id           INTEGER PRIMARY KEY,
    account      TEXT NOT NULL DEFAULT '',
    account_type TEXT NOT NULL DEFAULT '',
    suspended    INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);

CREATE TABLE installation_repositories (
    installation_id INTEGER NOT NULL REFERENCES installations (id) ON DELETE CASCADE,
    repository      TEXT NOT NULL,               -- owner/name
    repository_id   INTEGER NOT NULL DEFAULT 0,
    added_at        INTEGER NOT NULL,
    PRIMARY KEY (installation_id, repository)
);
CREATE INDEX installation_repositories_repository ON installation_repositories (repository);

-- +goose Down
DROP TABLE installation_repositories;
DROP TABLE installations;
DROP TABLE deliveries;
