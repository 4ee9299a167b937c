-- +goose Up
-- The newest answer to a click or command shown in a release's check run
-- (app/rollbackflow: "@octocat: opening the rollback pull request…", then
-- its link). Each answer is a job of its own, and jobs run in any order and
-- retry: the job of an earlier answer that ran last wrote the earlier text
-- over the later one. Every answer is kept here in its transaction, and a
-- job shows the one here, the newest committed.
CREATE TABLE release_check_notes (
    release_id TEXT PRIMARY KEY,
    note       TEXT NOT NULL
);

-- +goose Down
DROP TABLE release_check_notes;
