package protection

import (
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/rollout"
)

var now = time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC)

func holidays(regions ...string) rollout.Freeze {
	return rollout.Freeze{Start: now.Add(-time.Hour), End: now.Add(48 * time.Hour), Regions: regions, Reason: "holidays"}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	const ev1, ev2 = "acme/shop#7@s shop/prod pull_request opened", "acme/shop#7@s shop/prod pull_request synchronize"
	run := func(name, status, conclusion, ev string) CheckRun {
		return CheckRun{Name: name, Status: status, Conclusion: conclusion, Scope: "shop/prod", Evaluation: ev}
	}
	passed := []CheckRun{
		run("ripcord/provenance", "completed", "success", ev1),
		run("ripcord/sast", "completed", "neutral", ev1), // advisory pass
		run("ci/build", "completed", "failure", ev1),     // not a gate
	}
	gated := func(required ...string) []Rule {
		return []Rule{{App: "shop", Environment: "prod", Enabled: true, Gates: true, Required: required}}
	}
	tests := []struct {
		name        string
		rules       []Rule
		runs        []CheckRun
		wantState   string
		wantComment string
	}{
		{"no app enables the rule: rejected with how to enable it",
			[]Rule{{App: "shop", Environment: "prod"}}, nil, Rejected, "add `protection_rule: {enabled: true}`"},
		{"no config at all: rejected",
			nil, nil, Rejected, "no app in .github/ripcord.yml enables protection_rule"},
		{"a freeze over every region rejects and says until when",
			[]Rule{{App: "shop", Environment: "prod", Enabled: true, Freezes: []rollout.Freeze{holidays()}}}, nil,
			Rejected, "frozen until 2026-12-26T10:00:00Z: holidays"},
		{"a freeze without a reason says which window it is",
			[]Rule{{App: "shop", Environment: "prod", Enabled: true, Freezes: []rollout.Freeze{{Start: now.Add(-time.Hour), End: now.Add(48 * time.Hour)}}}}, nil,
			Rejected, "frozen until 2026-12-26T10:00:00Z: freeze (2026-12-24T09:00:00Z to 2026-12-26T10:00:00Z, all regions)"},
		{"another app's freeze that takes over as the first ends is in until",
			[]Rule{{App: "shop", Environment: "prod", Enabled: true, Freezes: []rollout.Freeze{holidays()}},
				{App: "cart", Environment: "prod", Enabled: true, Freezes: []rollout.Freeze{{Start: now.Add(48 * time.Hour), End: now.Add(72 * time.Hour), Reason: "cart"}}}}, nil,
			Rejected, "shop prod is frozen until 2026-12-27T10:00:00Z: holidays"},
		{"a later app's freeze that ends later is in until",
			[]Rule{{App: "cart", Environment: "prod", Enabled: true, Freezes: []rollout.Freeze{{Start: now.Add(-time.Hour), End: now.Add(time.Hour), Reason: "cart"}}},
				{App: "shop", Environment: "prod", Enabled: true, Freezes: []rollout.Freeze{holidays()}}}, nil,
			Rejected, "cart prod is frozen until 2026-12-26T10:00:00Z: cart"},
		{"a freeze of one of the environment's regions rejects",
			[]Rule{{App: "shop", Environment: "prod", Enabled: true, Regions: []string{"eu-1", "us-1"}, Freezes: []rollout.Freeze{holidays("us-1")}}}, nil,
			Rejected, "(regions us-1)"},
		{"a freeze of another region lets it through",
			[]Rule{{App: "shop", Environment: "prod", Enabled: true, Regions: []string{"eu-1"}, Freezes: []rollout.Freeze{holidays("us-1")}}}, nil,
			Approved, "no freeze window is active"},
		{"a freeze that ended lets it through",
			[]Rule{{App: "shop", Environment: "prod", Enabled: true, Freezes: []rollout.Freeze{{Start: now.Add(-48 * time.Hour), End: now.Add(-time.Hour)}}}}, nil,
			Approved, "no freeze window is active"},
		{"gates required and passed (neutral is an advisory pass; non-gate runs ignored)",
			gated("ripcord/provenance", "ripcord/sast"), passed, Approved, "ripcord/provenance, ripcord/sast"},
		{"a failed gate rejects, naming it",
			gated("ripcord/image-scan", "ripcord/provenance", "ripcord/sast"),
			append([]CheckRun{run("ripcord/image-scan", "completed", "failure", ev1)}, passed...),
			Rejected, "gates failed: ripcord/image-scan (failure)"},
		{"the newest run of a gate counts (a re-run that passed)",
			gated("ripcord/qa"),
			[]CheckRun{run("ripcord/qa", "completed", "success", ev1), run("ripcord/qa", "completed", "failure", ev1)},
			Approved, "ripcord/qa"},
		{"a running gate waits",
			gated("ripcord/provenance", "ripcord/sast"),
			append([]CheckRun{run("ripcord/provenance", "in_progress", "", ev1)}, passed[1:]...), "", "waiting for gates: ripcord/provenance"},
		{"no gate runs at all fails closed",
			gated("ripcord/provenance"), passed[2:], Rejected, "no gate verdict"},
		{"a freeze wins over passing gates",
			[]Rule{{App: "shop", Environment: "prod", Enabled: true, Gates: true, Required: []string{"ripcord/provenance"},
				Freezes: []rollout.Freeze{holidays()}}}, passed, Rejected, "frozen"},
		{"two apps share the environment: each one's verdict of a gate counts",
			[]Rule{{App: "shop", Environment: "prod", Enabled: true, Gates: true, Required: []string{"ripcord/qa"}},
				{App: "cart", Environment: "prod", Enabled: true, Gates: true, Required: []string{"ripcord/qa"}}},
			[]CheckRun{run("ripcord/qa", "completed", "success", ev1),
				{Name: "ripcord/qa", Status: "completed", Conclusion: "failure", Scope: "cart/prod", Evaluation: "acme/shop#7@s cart/prod pull_request opened"}},
			Rejected, "gates failed: ripcord/qa (failure)"},
		{"two apps share the environment: one's passing verdict does not stand in for the other's missing one",
			[]Rule{{App: "shop", Environment: "prod", Enabled: true, Gates: true, Required: []string{"ripcord/qa"}},
				{App: "cart", Environment: "prod", Enabled: true, Gates: true, Required: []string{"ripcord/qa"}}},
			[]CheckRun{{Name: "ripcord/qa", Status: "completed", Conclusion: "success", Scope: "cart/prod", Evaluation: "acme/shop#7@s cart/prod pull_request opened"}},
			Rejected, "no gate verdict of shop prod"},
		{"two apps share the environment: either one's freeze rejects",
			[]Rule{{App: "shop", Environment: "prod", Enabled: true}, {App: "cart", Environment: "prod", Enabled: true, Freezes: []rollout.Freeze{holidays()}}}, nil,
			Rejected, "cart prod is frozen"},
		{"the newest evaluation is judged whole: a gate it has not reported yet waits, an older verdict does not stand in",
			gated("ripcord/provenance", "ripcord/qa"),
			[]CheckRun{run("ripcord/qa", "completed", "success", ev2),
				run("ripcord/provenance", "completed", "success", ev1), run("ripcord/qa", "completed", "failure", ev1)},
			"", "waiting for gates: ripcord/provenance (not reported yet)"},
		{"the newest evaluation's failure rejects though an older one passed the gate",
			gated("ripcord/provenance"),
			[]CheckRun{run("ripcord/provenance", "completed", "failure", ev2), run("ripcord/provenance", "completed", "success", ev1)},
			Rejected, "gates failed: ripcord/provenance (failure)"},
		{"a gate the config no longer requires is not judged",
			gated("ripcord/provenance"),
			[]CheckRun{run("ripcord/qa", "completed", "failure", ev1), run("ripcord/provenance", "completed", "success", ev1)},
			Approved, "gates passed: ripcord/provenance"},
		{"an evaluation of gates all removed from the config is no verdict",
			gated(), passed, Rejected, "no gate verdict"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.rules, tt.runs, "0123456789abcdef0123", now)
			if got.State != tt.wantState || !strings.Contains(got.Comment, tt.wantComment) {
				t.Errorf("Decide = %q %q, want %q containing %q", got.State, got.Comment, tt.wantState, tt.wantComment)
			}
		})
	}
}

func TestRunIDFromTheCallbackURL(t *testing.T) {
	t.Parallel()
	for _, callback := range []string{
		"https://api.github.com/repos/acme/shop/actions/runs/4242/deployment_protection_rule",
		"https://ghe.example/api/v3/repos/Acme/Shop/actions/runs/4242/deployment_protection_rule", // GitHub Enterprise Server; names are case-insensitive
	} {
		id, err := runIDOf(callback, "acme/shop")
		if err != nil || id != 4242 {
			t.Fatalf("runIDOf(%q) = %d, %v; want 4242", callback, id, err)
		}
	}
	for _, callback := range []string{
		"https://api.github.com/repos/acme/shop/deployments/1",
		"https://api.github.com/repos/acme/other/actions/runs/4242/deployment_protection_rule",
		"https://api.github.com/repos/acme/shop/actions/runs/4242/approve",
		"https://api.github.com/repos/acme/shop/actions/runs/0/deployment_protection_rule",
	} {
		if id, err := runIDOf(callback, "acme/shop"); err == nil {
			t.Errorf("runIDOf(%q) = %d: accepted", callback, id)
		}
	}
}
