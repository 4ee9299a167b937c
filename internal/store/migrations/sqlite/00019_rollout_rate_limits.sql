-- +goose Up
-- GitHub's rate limit of an installation, as a rollout's run polls or
-- adoption met it past what the GitHub client waits out (app/rolloutflow,
-- ratewait.go): until reset_at no rollout of the installation asks GitHub
-- about its runs, since each request would be spent against a limit that
-- has not reset (and a secondary limit punishes that). began_at is when
-- the episode began: each rollout says it once in its audit. The row goes
-- when a request of the installation is answered after the reset.
CREATE TABLE rollout_rate_limits (
    installation_id BIGINT PRIMARY KEY,
    began_at        BIGINT NOT NULL,    -- unix microseconds
    reset_at        BIGINT NOT NULL     -- unix microseconds
);

-- +goose Down
DROP TABLE rollout_rate_limits;
