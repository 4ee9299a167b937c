-- +goose Up
CREATE TABLE deliveries (
    id              TEXT PRIMARY KEY,            -- X-GitHub-Delivery
    event           TEXT NOT NULL,
    action          TEXT NOT NULL DEFAULT '',
    installation_id BIGINT NOT NULL DEFAULT 0,
    repository      TEXT NOT NULL DEFAULT '',
    body            BYTEA NOT NULL,
    received_at     BIGINT NOT NULL,            -- unix microseconds
    state           TEXT NOT NULL DEFAULT 'queued',
    attempts        BIGINT NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT '',
    processed_at    BIGINT,
    processed_count INTEGER NOT NULL DEFAULT 0   -- how many times work completed; 1 is the only right answer
);
CREATE INDEX deliveries_received_at ON deliveries (received_at DESC, id);
CREATE INDEX deliveries_repository ON deliveries (repository, received_at DESC);

CREATE TABLE installations (
    id           BIGINT PRIMARY KEY,
    account      TEXT NOT NULL DEFAULT '',
    account_type TEXT NOT NULL DEFAULT '',
    suspended    BOOLEAN NOT NULL DEFAULT FALSE,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);

CREATE TABLE installation_repositories (
    installation_id BIGINT NOT NULL REFERENCES installations (id) ON DELETE CASCADE,
    repository      TEXT NOT NULL,               -- owner/name
    repository_id   BIGINT NOT NULL DEFAULT 0,
    added_at        BIGINT NOT NULL,
    PRIMARY KEY (installation_id, repository)
);
CREATE INDEX installation_repositories_repository ON installation_repositories (repository);

-- +goose Down
DROP TABLE installation_repositories;
DROP TABLE installations;
DROP TABLE deliveries;
