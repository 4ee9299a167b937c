package recoveryflow

import (
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/recovery"
)

func renderable(s State, action recovery.Action) Episode {
	next := t0.Add(20 * time.Second)
	ep := Episode{Repository: "acme/checkout", RunID: 7, RunAttempt: 2, RetryCount: 2, State: s, App: "checkout",
		Environment: "staging", Cluster: "eu", ReleaseID: "r2", Workflow: ".github/workflows/deploy.yml", HeadSHA: "0123456789abcdef",
		Decision: recovery.Decision{Action: action, Rule: "some-rule", Reason: "Because | of reasons.", Attempt: 2, MaxAttempts: 3,
			RetryAt: next, Target: &recovery.Target{ReleaseID: "r1", Version: "v1"}},
		Context: Context{Conclusion: "failure", FailureTypeSource: FromFact, Input: recovery.Input{FailureType: "health_check_failure", FailedVersion: "v2"},
			Config: Applied{Source: "acme/checkout:.github/ripcord.yml@default branch", RollbackMode: "workflow", Window: 5,
				Policy: recovery.Policy{MaxRetries: 3, InitialBackoff: 10 * time.Second, Multiplier: 2, MaxBackoff: 5 * time.Minute}}},
	}
	if s == StateRetryScheduled {
		ep.NextRetryAt = &next
	}
	return ep
}

func TestRenderCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                      string
		ep                        Episode
		status, conclusion, title string
	}{
		{"a scheduled retry is in progress and says when", renderable(StateRetryScheduled, recovery.ActionRetry), "in_progress", "", "Retry 2 of 3 at 2026-03-01T12:00:20Z"},
		{"a re-run in flight is in progress", renderable(StateRetrying, recovery.ActionRetry), "in_progress", "", "Re-running the failed jobs (retry 2 of 3)"},
		{"a recovered run is green", renderable(StateRecovered, recovery.ActionRetry), "completed", "success", "Recovered: attempt 2 succeeded"},
		{"a rollback in flight is in progress and names its target", renderable(StateRollingBack, recovery.ActionRollback), "in_progress", "", "Rolling back to v1"},
		{"a skip is neutral", renderable(StateSkipped, recovery.ActionSkip), "completed", "neutral", "Rollback skipped: another version is running"},
		{"a skip behind another run's rollback of the release says so", func() Episode {
			ep := renderable(StateSkipped, recovery.ActionSkip)
			ep.Decision.Rule = RuleSkipRollbackUnderWay
			return ep
		}(), "completed", "neutral", "Rollback skipped: this release is being rolled back already"},
		{"an alert fails the check", renderable(StateAlerted, recovery.ActionAlert), "completed", "failure", "Manual intervention required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := RenderCheck(c.ep)
			if v.Status != c.status || v.Conclusion != c.conclusion || v.Title != c.title {
				t.Errorf("got %s/%s %q, want %s/%s %q", v.Status, v.Conclusion, v.Title, c.status, c.conclusion, c.title)
			}
			for _, want := range []string{"**Why:** Because | of reasons.", "| attempt | 2 of 3 |", "health_check_failure (from fact)",
				"max_retries 3, initial_backoff 10s, multiplier 2, max_backoff 5m0s", "rollback mode workflow", "`v2` (r2)"} {
				if !strings.Contains(v.Summary, want) {
					t.Errorf("summary lacks %q:\n%s", want, v.Summary)
				}
			}
			if has := strings.Contains(v.Summary, "a rollback to v1 is running"); has != (c.ep.State == StateRollingBack) {
				t.Errorf("summary says a rollback is running = %v in state %s", has, c.ep.State)
			}
			if has := strings.Contains(v.Summary, "| next retry | 2026-03-01T12:00:20Z |"); has != (c.ep.State == StateRetryScheduled) {
				t.Errorf("next retry shown = %v in state %s", has, c.ep.State)
			}
		})
	}
}

func TestRenderIssueTellsTheStory(t *testing.T) {
	t.Parallel()
	ep := renderable(StateAlerted, recovery.ActionAlert)
	story := []records.AuditEvent{
		{Type: records.AuditFailureDetected, At: t0, Message: "Run 7 failed"},
		{Type: records.AuditRetryInitiated, At: t0.Add(time.Second), Message: "Re-running\nwith | pipes"},
	}
	title, body := RenderIssue(ep, story)
	if title != "ripcord: manual intervention required for checkout in staging/eu (release r2)" {
		t.Errorf("title %q", title)
	}
	for _, want := range []string{"run 7 of `.github/workflows/deploy.yml`", "commit 01234567", "**Why:** Because | of reasons.",
		"| 2026-03-01T12:00:01Z | `retry_initiated` | Re-running with \\| pipes |", issueMarker("r2")} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
	if strings.Index(body, "failure_detected") > strings.Index(body, "retry_initiated") {
		t.Error("the story is not oldest first")
	}
}

// Seed 000's rollback_initiated records the version that was actually
// running; so does rollback_skipped, whose whole reason it is.
func TestRollbackEventsRecordTheRunningVersion(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		action recovery.Action
		event  string
	}{
		{recovery.ActionRollback, recovery.EventRollbackInitiated},
		{recovery.ActionSkip, recovery.EventRollbackSkipped},
	} {
		ep := renderable(StateRollingBack, c.action)
		ep.Decision.AuditEvents = []string{recovery.EventFailureDetected, c.event}
		ep.Context.Input.Live = recovery.Live{Known: true, Version: "v2"}
		ep.Context.LiveReleaseID = "r2"
		events := decisionEvents(ep, "d1", true)
		if len(events) != 2 || string(events[1].Type) != c.event {
			t.Fatalf("%s: events %+v", c.action, events)
		}
		if d := events[1].Data; d["live_version"] != "v2" || d["live_release_id"] != "r2" {
			t.Errorf("%s: %s data = %v, want the running version v2 (release r2)", c.action, c.event, d)
		}
	}
}
