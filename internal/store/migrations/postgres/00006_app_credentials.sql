-- +goose Up
-- The GitHub App registered through /setup (app/setup, the manifest flow).
-- The private key and both secrets are sealed with AES-256-GCM under the
-- secrets_key setting (or its key file); the other columns are public. The
-- newest row is the one in use. Times are unix microseconds.
CREATE TABLE app_credentials (
    app_id         BIGINT PRIMARY KEY,
    slug           TEXT NOT NULL,
    html_url       TEXT NOT NULL,
    client_id      TEXT NOT NULL,
    api_url        TEXT NOT NULL,    -- github.api_url at registration
    client_secret  BYTEA NOT NULL,  -- sealed: nonce || ciphertext
    webhook_secret BYTEA NOT NULL,  -- sealed
    private_key    BYTEA NOT NULL,  -- sealed PEM
    created_at     BIGINT NOT NULL
);

-- One row per /setup page shown: the callback accepts a state once, and only
-- within an hour (GitHub's codes expire in an hour too).
CREATE TABLE app_setup_states (
    state      TEXT PRIMARY KEY,
    created_at BIGINT NOT NULL
);

-- +goose Down
DROP TABLE app_setup_states;
DROP TABLE app_credentials;
