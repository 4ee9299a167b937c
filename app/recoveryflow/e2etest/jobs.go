package e2etest

import (
	"context"
	"time"

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

// WaitsForLimit checks that kind's jobs, n of them, wait for GitHub's rate
// limit to lift rather than spend an attempt on it: each scheduled, at
// attempt 0, due wait after GitHub's refusal, which came between from and
// to (a few seconds either side: a reset's margin, the seconds GitHub
// names its times in).
func (e *Env) WaitsForLimit(kind string, n int, from, to time.Time, wait time.Duration) {
	e.T.Helper()
	js := e.Jobs(kind)
	if len(js) != n {
		e.T.Fatalf("%d %s jobs, want %d", len(js), kind, n)
	}
	for _, j := range js {
		if j.State != rivertype.JobStateScheduled || j.Attempt != 0 {
			e.T.Errorf("%s job %s at attempt %d on GitHub's rate limit, want scheduled at attempt 0: the wait is not a failed attempt",
				kind, j.State, j.Attempt)
		}
		if lo, hi := from.Add(wait-3*time.Second), to.Add(wait+3*time.Second); j.ScheduledAt.Before(lo) || j.ScheduledAt.After(hi) {
			e.T.Errorf("%s job tries again at %s, want %s after the refusal (between %s and %s)", kind,
				j.ScheduledAt.UTC().Format(time.RFC3339), wait, lo.UTC().Format(time.RFC3339), hi.UTC().Format(time.RFC3339))
		}
	}
}
