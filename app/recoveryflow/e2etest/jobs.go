package e2etest

import (
	"context"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Jobs are the jobs of kind in every state, read through River, which
// reads their times (scheduled_at) the same way on both databases.
func (e *Env) Jobs(kind string) []*rivertype.JobRow {
	e.T.Helper()
	rc, err := river.NewClient(e.db.RiverDriver(), &river.Config{})
	if err != nil {
		e.T.Fatalf("e2etest: %v", err)
	}
	res, err := rc.JobList(context.Background(), river.NewJobListParams().Kinds(kind).
		States(rivertype.JobStateAvailable, rivertype.JobStateScheduled, rivertype.JobStateRetryable, rivertype.JobStateRunning,
			rivertype.JobStateCompleted, rivertype.JobStateDiscarded, rivertype.JobStateCancelled, rivertype.JobStatePending))
	if err != nil {
		e.T.Fatalf("e2etest: jobs of kind %s: %v", kind, err)
	}
	return res.Jobs
}
