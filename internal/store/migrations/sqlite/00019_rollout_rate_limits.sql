-- +goose Up
-- GitHub's rate limit of an installation, as a request of one of its
-- rollouts met it past what the GitHub client waits out (app/rolloutflow:
-- ratewait.go keeps it, ratelimit.go tells a rate limit apart): a batch's
-- dispatch (or the default branch or installation token it needs), a
-- probe workflow's dispatch, a run poll, the adoption of a run by its name
-- (or the repository asked for after a 404), or the write of the
-- ripcord/rollout check run. Until reset_at none of these is sent for any
-- rollout of the installation, on any replica, whatever wakes it: each
-- would be spent against a limit that has not reset (and a secondary limit
-- punishes that); the batches, runs and probe readings it holds wait, and
-- nothing fails meanwhile. began_at is when the episode began (the first
-- refusal since a request got through): each rollout says it once in its
-- audit. The row goes when a request of the installation is answered after
-- the reset.
CREATE TABLE rollout_rate_limits (
    installation_id BIGINT PRIMARY KEY,
    began_at        BIGINT NOT NULL,    -- unix microseconds
    reset_at        BIGINT NOT NULL     -- unix microseconds
);

-- +goose Down
DROP TABLE rollout_rate_limits;
