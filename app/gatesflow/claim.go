package gatesflow

import (
	"context"
	"fmt"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/store"
)

// claimWait is how long a verdict waits while another job creates a run of
// the same gate of the same scope on the commit.
const claimWait = time.Second

// runKey names the runs of one gate of one scope on a commit: those whose
// order of creation decides the gate's result there.
func runKey(a ReportArgs) string {
	return fmt.Sprintf("%s@%s %s/%s %s", a.Repository, a.HeadSHA, a.App, a.Environment, a.Name)
}

// claimCreation claims, for job, the creation of a run of a's gate: the
// gate's result on the commit is its newest run, and an older evaluation
// that looked for newer runs before a newer one created its run, and
// created its own after, would stand as the result. Held, the caller looks
// again and creates only when no newer evaluation has a run, then calls
// release. held is false while another job that River has not finished
// with holds it; a lost job's claim is taken over. A job queued before
// reports named their scope (a.App empty) takes no claim.
func claimCreation(ctx context.Context, d pipeline.Deps, a ReportArgs, job int64) (release func(), held bool, err error) {
	if a.App == "" {
		return func() {}, true, nil
	}
	key, db := runKey(a), d.DB.Write
	release = func() {
		// Also when ctx ended: a claim left behind keeps the key's next
		// creation waiting for this job to be done.
		_, _ = db.ExecContext(context.WithoutCancel(ctx), `DELETE FROM gate_run_claims WHERE run_key = $1 AND claim = $2`, key, job)
	}
	now := store.Micros(d.Now())
	if _, err := db.ExecContext(ctx, `INSERT INTO gate_run_claims (run_key, claim, claimed_at) VALUES ($1, $2, $3)
		ON CONFLICT (run_key) DO NOTHING`, key, job, now); err != nil {
		return nil, false, fmt.Errorf("claim the creation of %s: %w", key, err)
	}
	var holder int64
	if err := db.QueryRowContext(ctx, `SELECT claim FROM gate_run_claims WHERE run_key = $1`, key).Scan(&holder); err != nil {
		return nil, false, fmt.Errorf("read the claim of %s: %w", key, err)
	}
	if holder == job {
		return release, true, nil
	}
	if gone, err := d.JobGone(ctx, holder); err != nil || !gone {
		return nil, false, err
	}
	res, err := db.ExecContext(ctx, `UPDATE gate_run_claims SET claim = $1, claimed_at = $2 WHERE run_key = $3 AND claim = $4`,
		job, now, key, holder)
	if err != nil {
		return nil, false, fmt.Errorf("take over the claim of %s: %w", key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, false, fmt.Errorf("take over the claim of %s: %w", key, err)
	}
	return release, n == 1, nil
}

// mayCreate reports whether a report, given what findRun found, goes on to
// create a run of its gate.
func mayCreate(a ReportArgs, existing, newer *github.CheckRun) bool {
	return newer == nil && existing == nil && (!a.GaveUp || a.Create)
}
