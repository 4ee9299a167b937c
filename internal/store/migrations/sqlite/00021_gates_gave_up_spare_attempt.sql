-- +goose Up
-- On PostgreSQL this migration gives the gate give-ups queued before their
-- spare attempt existed that attempt, for River's rescuer (see the postgres
-- migration). On SQLite there is nothing to do, as for migration 20: a job
-- lost with its process is made available again at the next start whatever
-- its max_attempts (store.RecoverOrphanedJobs), and the give-up's worker
-- runs its work again at that attempt. (Nor could SQL here touch river_job
-- on a new database: River's tables are made after ripcord's migrations,
-- and SQLite has no conditional statement.)
SELECT 1;

-- +goose Down
SELECT 1;
