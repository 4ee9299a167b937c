-- +goose Up
-- A gate evaluation's give-up (River kind gates_gave_up) completes the runs
-- the evaluation showed in progress; nothing else does. It is now queued
-- with one attempt more than its work uses (8), which runs only when the
-- last attempt of those was lost with its process (app/gatesflow,
-- gaveUpWorker.Work): River's rescuer discards a job lost at max_attempts
-- without running it again, so a give-up lost at its last attempt left its
-- runs spinning for ever. The give-ups still to run get that attempt, as
-- migration 20 gave it to evaluations and verdicts. Those already ended are
-- left as they are. River's tables are made after ripcord's migrations, so
-- a new database has none yet, and no job.
-- +goose StatementBegin
DO $$
BEGIN
    IF to_regclass('river_job') IS NOT NULL THEN
        UPDATE river_job SET max_attempts = 9
        WHERE kind = 'gates_gave_up' AND max_attempts < 9
          AND state IN ('available', 'scheduled', 'retryable', 'running');
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- Nothing: the jobs the migration changed cannot be told from those queued
-- with the spare attempt, which runs only for a lost last attempt.
