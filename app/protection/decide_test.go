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
	passed := []CheckRun{
		{Name: "ripcord/provenance", Status: "completed", Conclusion: "success"},
		{Name: "ripcord/sast", Status: "completed", Conclusion: "neutral"}, // advisory pass
		{Name: "ci/build", Status: "completed", Conclusion: "failure"},     // not a gate
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
			[]Rule{{App: "shop", Environment: "prod", Enabled: true, Gates: true}}, passed, Approved, "ripcord/provenance, ripcord/sast"},
		{"a failed gate rejects, naming it",
			[]Rule{{App: "shop", Environment: "prod", Enabled: true, Gates: true}},
			append([]CheckRun{{Name: "ripcord/image-scan", Status: "completed", Conclusion: "failure"}}, passed...),
			Rejected, "gates failed: ripcord/image-scan (failure)"},
		{"the newest run of a gate counts (a re-run that passed)",
			[]Rule{{App: "shop", Environment: "prod", Enabled: true, Gates: true}},
			[]CheckRun{{Name: "ripcord/qa", Status: "completed", Conclusion: "success"}, {Name: "ripcord/qa", Status: "completed", Conclusion: "failure"}},
			Approved, "ripcord/qa"},
		{"a running gate waits",
			[]Rule{{App: "shop", Environment: "prod", Enabled: true, Gates: true}},
			append([]CheckRun{{Name: "ripcord/provenance", Status: "in_progress"}}, passed[1:]...), "", "waiting for gates: ripcord/provenance"},
		{"no gate runs at all fails closed",
			[]Rule{{App: "shop", Environment: "prod", Enabled: true, Gates: true}}, passed[2:], Rejected, "no gate verdict"},
		{"a freeze wins over passing gates",
			[]Rule{{App: "shop", Environment: "prod", Enabled: true, Gates: true, Freezes: []rollout.Freeze{holidays()}}}, passed, Rejected, "frozen"},
		{"two apps share the environment: each one's verdict of a gate counts",
			[]Rule{{App: "shop", Environment: "prod", Enabled: true, Gates: true}, {App: "cart", Environment: "prod", Enabled: true, Gates: true}},
			[]CheckRun{{Name: "ripcord/qa", Status: "completed", Conclusion: "success", Scope: "shop/prod"},
				{Name: "ripcord/qa", Status: "completed", Conclusion: "failure", Scope: "cart/prod"}},
			Rejected, "gates failed: ripcord/qa (failure)"},
		{"two apps share the environment: either one's freeze rejects",
			[]Rule{{App: "shop", Environment: "prod", Enabled: true}, {App: "cart", Environment: "prod", Enabled: true, Freezes: []rollout.Freeze{holidays()}}}, nil,
			Rejected, "cart prod is frozen"},
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
	id, err := runIDOf("https://api.github.com/repos/acme/shop/actions/runs/4242/deployment_protection_rule")
	if err != nil || id != 4242 {
		t.Fatalf("runIDOf = %d, %v; want 4242", id, err)
	}
	if _, err := runIDOf("https://api.github.com/repos/acme/shop/deployments/1"); err == nil {
		t.Fatal("a callback URL without a run id was accepted")
	}
}
