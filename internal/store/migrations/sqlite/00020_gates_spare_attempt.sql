-- +goose Up
-- On PostgreSQL this migration gives the gate evaluations and verdicts
-- queued before their spare attempt existed that attempt, for River's
-- rescuer (see the postgres migration). On SQLite there is nothing to do:
-- a job lost with its process is made available again at the next start
-- whatever its max_attempts (store.RecoverOrphanedJobs), and its worker,
-- which decides by its own budget, only gives up at that attempt. (Nor
-- could SQL here touch river_job on a new database: River's tables are made
-- after ripcord's migrations, and SQLite has no conditional statement.)
SELECT 1;

-- +goose Down
SELECT 1;
