package gatesflow

import (
	"context"
	"fmt"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/pipeline"
)

// claimWait is how long a verdict waits while another job creates a run of
// the same gate of the same scope on the commit.
const claimWait = time.Second

// runKey names the runs of one gate of one scope on a commit: those whose
// order of creation decides the gate's result there.
func runKey(a ReportArgs) string {
	return fmt.Sprintf("%s@%s %s/%s %s", a.Repository, a.HeadSHA, a.App, a.Environment, a.Name)
}

// claimCreation claims, for job, the creation of a run of a's gate
// (pipeline.Deps.Claim): the gate's result on the commit is its newest
// run, and an older evaluation that looked for newer runs before a newer
// one created its run, and created its own after, would stand as the
// result. Held, the caller looks again and creates only when no newer
// evaluation has a run, then calls release. A job queued before reports
// named their scope (a.App empty) takes no claim.
func claimCreation(ctx context.Context, d pipeline.Deps, a ReportArgs, job int64) (release func(), held bool, err error) {
	if a.App == "" {
		return func() {}, true, nil
	}
	return d.Claim(ctx, "gate-run "+runKey(a), job)
}

// mayCreate reports whether a report, given what findRun found, goes on to
// create a run of its gate.
func mayCreate(a ReportArgs, existing, newer *github.CheckRun) bool {
	return newer == nil && existing == nil && (!a.GaveUp || a.Create)
}
