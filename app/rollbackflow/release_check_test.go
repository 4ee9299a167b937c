package rollbackflow

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/eligibility"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/records"
)

func TestRenderReleaseCheck(t *testing.T) {
	t.Parallel()
	target := &records.Record{ReleaseID: "r1", GitRevision: strings.Repeat("ab", 20), Image: "app:v1"}
	healthyAt := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name               string
		state              records.State
		target             *records.Record
		status, conclusion string
		button             bool
	}{
		{"a progressing release has no button yet: GitHub shows buttons on completed runs only", records.StateProgressing, target, "in_progress", "", false},
		{"a healthy release offers the escape hatch, neutrally", records.StateHealthy, target, "completed", "neutral", true},
		{"a degraded release asks for action", records.StateDegraded, target, "completed", "action_required", true},
		{"an aborted release asks for action", records.StateAborted, target, "completed", "action_required", true},
		{"a failed release asks for action", records.StateFailed, target, "completed", "action_required", true},
		{"a failed release with no eligible target offers nothing", records.StateFailed, nil, "completed", "action_required", false},
		{"a superseded release is history: no button", records.StateSuperseded, target, "completed", "neutral", false},
		{"a rolled-back release is history: no button", records.StateRolledBack, target, "completed", "neutral", false},
	}
	for _, c := range cases {
		// Every state after opened comes from a fact.
		r := records.Record{ReleaseID: "r2", App: "checkout", Environment: "prod", Cluster: "prod-eu", State: c.state, HealthyAt: &healthyAt,
			LastFactAt: &healthyAt}
		v := RenderReleaseCheck(r, c.target, eligibility.Answer{Eligible: c.target != nil, Reason: "healthy before"}, "")
		if v.Status != c.status || v.Conclusion != c.conclusion || (len(v.Actions) == 1) != c.button {
			t.Errorf("%s: status %q conclusion %q buttons %d; want %q %q button=%v", c.name, v.Status, v.Conclusion, len(v.Actions), c.status, c.conclusion, c.button)
		}
		for _, a := range v.Actions {
			if len(a.Identifier) > 20 || len([]rune(a.Description)) > 40 || len([]rune(a.Label)) > 20 {
				t.Errorf("%s: button %+v exceeds GitHub's limits (label 20, description 40, identifier 20)", c.name, a)
			}
		}
	}
	// A rollback whose pull request was closed without merging never ran:
	// nothing of it to roll back, and the run ends cancelled.
	withdrawn, _, _ := records.Withdraw(records.Record{ReleaseID: "rb", App: "checkout", Environment: "prod", State: records.StateOpened},
		"pull request closed", nil, healthyAt)
	v := RenderReleaseCheck(withdrawn, target, eligibility.Answer{Eligible: true}, "")
	if v.Status != "completed" || v.Conclusion != "cancelled" || len(v.Actions) != 0 || !strings.Contains(v.Summary, "closed without merging") {
		t.Errorf("withdrawn rollback: status %q conclusion %q buttons %d summary %q; want completed, cancelled, none, closed without merging",
			v.Status, v.Conclusion, len(v.Actions), v.Summary)
	}
}

// A release's check run is found by name and external id (the release id,
// easy to guess). One that a workflow's token or another App made is not
// ripcord's: GitHub refuses every update of it, so taking it would leave
// the release without its own check run and Roll back button for good.
func TestReleaseCheckIgnoresAnotherAppsRun(t *testing.T) {
	t.Parallel()
	fake := githubtest.NewServer(t)
	gh, err := github.NewClient(nil).WithEnterpriseURLs(fake.URL(), fake.URL())
	if err != nil {
		t.Fatal(err)
	}
	const repo = "acme/checkout"
	r := records.Record{ReleaseID: "rel-1", Repository: repo, GitRevision: strings.Repeat("ab", 20), App: "checkout",
		Environment: "prod", Cluster: "eu", State: records.StateHealthy, Image: "checkout:v2"}
	foreign := fake.AddCheckRun(repo, githubtest.CheckRun{Name: ReleaseCheckName, HeadSHA: r.GitRevision, ExternalID: r.ReleaseID,
		Conclusion: "success", AppSlug: "github-actions"})
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for i := range 2 { // the first write creates ripcord's run, the second updates it
		if err := writeReleaseCheck(context.Background(), gh, githubtest.AppID, r, releaseCheckExternalID(r.ReleaseID, 0), RenderReleaseCheck(r, nil, eligibility.Answer{}, ""), now, nil); err != nil {
			t.Fatalf("write %d: %v", i+1, err)
		}
	}
	var own []githubtest.CheckRun
	for _, cr := range fake.CheckRuns(repo) {
		switch {
		case cr.ID == foreign.ID && (cr.Updates != 0 || cr.Conclusion != "success"):
			t.Errorf("the other App's run was changed: %+v", cr)
		case cr.ID != foreign.ID:
			own = append(own, cr)
		}
	}
	if len(own) != 1 || own[0].ExternalID != r.ReleaseID+"/rollback-0" || own[0].Updates != 1 || own[0].Conclusion != "neutral" {
		t.Errorf("ripcord's runs %+v, want one for %s, created then updated once", own, r.ReleaseID)
	}
}
