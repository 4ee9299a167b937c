package gatesflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/githubtest"
)

// A verdict of an evaluation whose give-up completed its run first (the
// verdict was queued by an attempt before the one that failed for good,
// and its job ran late) is what the gate says: it replaces the failure
// rather than being dropped as a run already completed.
func TestAVerdictReplacesItsEvaluationsGiveUp(t *testing.T) {
	t.Parallel()
	s, gh := fakeGitHub(t)
	const head = "19c382f4dd64bc65b314550afc304816918bbb0a"
	key := "acme/checkout#1@" + head + " checkout/prod pull_request opened seq=7"
	failed := s.AddCheckRun("acme/checkout", githubtest.CheckRun{Name: "ripcord/qa", HeadSHA: head, ExternalID: key,
		Status: "completed", Conclusion: "failure", Title: GaveUpTitle, Summary: "stopped after 5 attempts"})
	ctx := context.Background()
	existing, _, err := gh.Checks.GetCheckRun(ctx, "acme", "checkout", failed.ID)
	if err != nil {
		t.Fatal(err)
	}
	w := &reportWorker{deps: pipeline.Deps{Now: time.Now}}
	a := ReportArgs{Repository: "acme/checkout", HeadSHA: head, ExternalID: key, App: "checkout", Environment: "prod", Seq: 7,
		Name: "ripcord/qa", Status: "completed", Conclusion: "success", Title: "QA approved", Summary: "labelled qa-approved"}
	if _, err := w.complete(ctx, gh, a, existing); err != nil {
		t.Fatal(err)
	}
	runs := s.CheckRuns("acme/checkout")
	if len(runs) != 1 || runs[0].Conclusion != "success" || runs[0].Title != "QA approved" {
		t.Errorf("runs after the verdict: %+v, want the give-up's run to carry the verdict", runs)
	}
}

func TestPlainErrorSaysWhatGitHubAnswered(t *testing.T) {
	t.Parallel()
	_, gh := fakeGitHub(t)
	_, _, err := gh.PullRequests.Get(context.Background(), "acme", "checkout", 404)
	var er *github.ErrorResponse
	if !errors.As(err, &er) {
		t.Fatalf("reading a pull request that does not exist: %v, want GitHub's error answer", err)
	}
	got := plainError(fmt.Errorf("read pull request acme/checkout#404: %w", err), "evaluation", time.Minute)
	if !strings.HasPrefix(got, "read pull request acme/checkout#404: GitHub answered 404 ") || strings.Contains(got, "http") {
		t.Errorf("plainError = %q, want what was being done and GitHub's status and message, without the request", got)
	}
	if got := plainError(fmt.Errorf("queue gate check runs: %w", context.DeadlineExceeded), "evaluation", time.Minute); !strings.Contains(got, "ran out of its") {
		t.Errorf("plainError = %q, want it to say the evaluation ran out of time", got)
	}
}

// Verdicts judged when the job's time has run out are still queued: their
// context is live, and bounded. A job cancelled (the server stopping), at
// once or later, cancels it: its gates were interrupted, not judged.
func TestVerdictsAreQueuedAfterTheJobsDeadline(t *testing.T) {
	job, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	ctx, stop := verdictContext(job)
	defer stop()
	if err := ctx.Err(); err != nil {
		t.Fatalf("the verdicts' context of a job past its deadline: %v", err)
	}
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > giveUpTimeout {
		t.Errorf("the verdicts' context ends at %v (set %v), want within %v", dl, ok, giveUpTimeout)
	}

	stopped, stopNow := context.WithCancel(context.Background())
	stopNow()
	if ctx, stop := verdictContext(stopped); ctx.Err() == nil {
		t.Error("the verdicts' context of a job cancelled before they were judged is live")
	} else {
		stop()
	}

	running, stopLater := context.WithTimeout(context.Background(), time.Hour)
	ctx, stop = verdictContext(running)
	defer stop()
	stopLater()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Error("the verdicts' context lives on 10 s after its job was cancelled")
	}
}
