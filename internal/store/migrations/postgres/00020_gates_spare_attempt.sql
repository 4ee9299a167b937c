-- +goose Up
-- Gate evaluations (River kind gates_evaluate) and verdicts (gates_report)
-- are queued with one attempt more than their work uses (8 attempts):
-- their worker decides by that budget, not by max_attempts, so the attempt
-- beyond it only gives up (app/gatesflow, errLostAttempt). River's rescuer
-- retries a job lost with its process only below max_attempts and discards
-- it at max_attempts without running it, so a job queued before the spare
-- attempt (max_attempts 8, or 5 for evaluations queued before they had 8)
-- and lost at its last attempt never gave up: its gate runs spun for ever.
-- The jobs still to run get the spare attempt. Those already ended are
-- left as they are. River's tables are made after ripcord's migrations, so
-- a new database has none yet, and no job.
-- +goose StatementBegin
DO $$
BEGIN
    IF to_regclass('river_job') IS NOT NULL THEN
        UPDATE river_job SET max_attempts = 9
        WHERE kind IN ('gates_evaluate', 'gates_report') AND max_attempts < 9
          AND state IN ('available', 'scheduled', 'retryable', 'running');
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- Nothing: the jobs the migration changed cannot be told from those queued
-- with the spare attempt, and the spare attempt only gives up.
