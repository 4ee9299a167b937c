-- +goose Up
-- Each repository's .github/ripcord.yml as the servers last read it from
-- its default branch (app/pipeline/configs.go), for the readers that must
-- not call GitHub per request (GET /api/v1/eligibility, the pages, a
-- release check's rollback target): kept here, not in each server's
-- memory, so the answer is the same after a restart and on every replica.
-- A repository with no config to use (missing, or not loading) has no
-- row, or one with sha and config '' once a read found none after one
-- found a file. sha is the SHA-256 (hex) of config, the file's text: a
-- read of the same file again compares it and writes nothing. read_at
-- (unix microseconds) is when the read that wrote the row began: a read
-- that began earlier and finished later does not overwrite it.
CREATE TABLE repo_configs (
    repository TEXT PRIMARY KEY,
    sha        TEXT NOT NULL,
    config     TEXT NOT NULL,
    read_at    BIGINT NOT NULL
);

-- +goose Down
DROP TABLE repo_configs;
