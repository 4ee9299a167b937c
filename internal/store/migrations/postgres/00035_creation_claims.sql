-- +goose Up
-- A job about to create something on GitHub whose order or uniqueness
-- matters, which another job may be creating at the same moment, claims
-- its key here first, looks again, creates, and deletes the claim
-- (pipeline.Deps.Claim). Keys: "gate-run <repository>@<commit>
-- <app>/<environment> <gate>" (a gate's result on a commit is its newest
-- run: an older evaluation's verdict created last would stand),
-- "rollback-branch <repository> <branch>" (two rollbacks to one commit
-- share a branch name: one created the branch, the other took it over
-- before the first had opened its pull request), "rollout-check <id>" and
-- "release-check <release id>" (two jobs that found no check run each
-- created one, and the one not kept stayed in progress for good). A row outlives its job
-- only when the job was lost while holding it; the key's next claimant
-- takes it over once River is done with that job.
CREATE TABLE creation_claims (
    claim_key  TEXT PRIMARY KEY,
    claim      BIGINT NOT NULL, -- the job creating
    claimed_at BIGINT NOT NULL
);

-- +goose Down
DROP TABLE creation_claims;
