-- +goose Up
-- A gate's result on a commit is its newest run there, so runs of one gate
-- of one scope (app and environment) must be created in the order of
-- their evaluations. The job about to create one claims its key here,
-- looks on GitHub again for a run of a newer evaluation, creates its own
-- only if there is none, and deletes the claim: without it an older
-- evaluation's verdict could be created last and stand as the result
-- (app/gatesflow/claim.go). A row outlives its job only when the job was
-- lost while holding it; the next claimant of the key takes it over.
CREATE TABLE gate_run_claims (
    run_key    TEXT PRIMARY KEY, -- repository@commit app/environment gate
    claim      INTEGER NOT NULL,  -- the job creating a run of the key
    claimed_at INTEGER NOT NULL
);

-- +goose Down
DROP TABLE gate_run_claims;
