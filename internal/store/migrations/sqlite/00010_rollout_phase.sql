-- +goose Up
-- A rollout waits for the older rollouts of its app and environment to end
-- (app/rolloutflow, paused-queue). "Ended" is the machine's phase, not its
-- status: a failed rollout may still be rolling back. The phase gets a
-- column of its own, and the rollouts not done an index to find them by.
-- GET /api/v1/rollouts?app=&environment= lists an environment's rollouts.
ALTER TABLE rollouts ADD COLUMN phase TEXT NOT NULL DEFAULT '';
UPDATE rollouts SET phase = coalesce(json_extract(machine, '$.phase'), '');
CREATE INDEX rollouts_unfinished ON rollouts (app, environment, created_at) WHERE phase <> 'done';
CREATE INDEX rollouts_environment ON rollouts (app, environment, created_at DESC);

-- +goose Down
DROP INDEX rollouts_environment;
DROP INDEX rollouts_unfinished;
ALTER TABLE rollouts DROP COLUMN phase;
