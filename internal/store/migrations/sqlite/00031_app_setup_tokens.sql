-- +goose Up
-- The set-up tokens of the servers that started with no App: /setup shows
-- its registration forms only to a request that brings one of them, as the
-- start-up log prints it. Each replica logs its own token and accepts every
-- replica's, so the link from any log works behind a load balancer. Only a
-- SHA-256 of each token is kept (hex): the database holds nothing that opens
-- /setup. Registering an App deletes them all. Times are unix microseconds.
CREATE TABLE app_setup_tokens (
    token_hash TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL
);

-- +goose Down
DROP TABLE app_setup_tokens;
