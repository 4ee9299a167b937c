-- +goose Up
-- When the pull request of a release opened for one (pr_url or pr_number
-- set) was merged, unix microseconds; NULL while it is not. Such a
-- release can run only after the merge, so its stall clock starts there
-- (records/merged.go).
ALTER TABLE records ADD COLUMN merged_at INTEGER;

-- +goose Down
ALTER TABLE records DROP COLUMN merged_at;
