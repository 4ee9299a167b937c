package repoconfig

import (
	"reflect"
	"testing"
	"time"
)

func TestAppForWorkflow(t *testing.T) {
	cfg := mustLoad(t, mustRead(t, "testdata/full.yml"))
	tests := []struct {
		name string
		file string
		want []Deploy
	}{
		{"one workflow deploying two environments names both, in file order", "deploy.yml",
			[]Deploy{{"checkout", "staging"}, {"checkout", "prod"}}},
		{"path as workflow_run reports it", ".github/workflows/release.yml", []Deploy{{"payments", "prod"}}},
		{"path with a ref suffix", ".github/workflows/release.yml@refs/heads/main", []Deploy{{"payments", "prod"}}},
		{"config written with the full path matches the bare name", "hotfix.yaml", []Deploy{{"checkout", "staging"}}},
		{"workflow no environment lists is not ripcord's to handle", "ci.yml", nil},
		{"same base name in another directory is not the same workflow", "other/deploy.yml", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cfg.AppForWorkflow(tt.file); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("AppForWorkflow(%q) = %v, want %v", tt.file, got, tt.want)
			}
		})
	}
}

func TestEnvironmentLookup(t *testing.T) {
	cfg := mustLoad(t, mustRead(t, "testdata/full.yml"))
	if e, ok := cfg.Environment("payments", "prod"); !ok || e.Cluster != "prod-us" {
		t.Errorf("Environment(payments, prod) = %+v, %v", e, ok)
	}
	if _, ok := cfg.Environment("payments", "staging"); ok {
		t.Error("an environment the app does not have was found")
	}
	if _, ok := cfg.Environment("nope", "prod"); ok {
		t.Error("an app the file does not have was found")
	}
}

func TestRecoveryForMergesAppOverFile(t *testing.T) {
	cfg := mustLoad(t, mustRead(t, "testdata/full.yml"))
	want := Recovery{
		MaxRetries: 1, InitialBackoff: 30 * time.Second, Multiplier: 1.5, MaxBackoff: 10 * time.Minute,
		FailureTypes: map[string][]string{
			"build_failure":        {"build*", "compile*"},
			"test_failure":         {"test*", "*/ unit tests"},
			"lint_failure":         {"lint"},
			"health_check_failure": {"smoke*"},
		},
	}
	if got := cfg.RecoveryFor("checkout"); !reflect.DeepEqual(got, want) {
		t.Errorf("checkout: got %+v\nwant %+v", got, want)
	}
	// An app without an override gets the file's section, and merging for
	// one app must not leak into another.
	if got := cfg.RecoveryFor("payments"); got.MaxRetries != 5 || len(got.FailureTypes) != 3 {
		t.Errorf("payments: %+v", got)
	}
	if got := cfg.RecoveryFor("unknown-app"); got.MaxRetries != 5 {
		t.Errorf("unknown app: %+v", got)
	}
}

func TestGatesForOverridesGateByGate(t *testing.T) {
	cfg := mustLoad(t, mustRead(t, "testdata/full.yml"))
	g, ok := cfg.GatesFor("checkout", "staging")
	if !ok {
		t.Fatal("no gates for checkout/staging")
	}
	if g.SAST.Severity != "low" {
		t.Errorf("staging's sast override lost: %+v", g.SAST)
	}
	if !reflect.DeepEqual(g.Process.QA.Labels, []string{"staging-qa"}) {
		t.Errorf("staging's qa override lost: %+v", g.Process.QA)
	}
	if g.Process.ITSM == nil || g.Process.PolicyValidation == nil || g.Provenance == nil || g.CommitSigning == nil || !*g.CommitSigning {
		t.Errorf("overriding one process gate dropped the app's others: %+v", g)
	}
	prod, _ := cfg.GatesFor("checkout", "prod")
	if prod.SAST.Severity != "high" || !reflect.DeepEqual(prod.Process.QA.Labels, []string{"qa-approved"}) {
		t.Errorf("staging's override leaked into prod: %+v", prod)
	}
	if _, ok := cfg.GatesFor("checkout", "dev"); ok {
		t.Error("gates for an unknown environment")
	}
}

func TestCommandPermission(t *testing.T) {
	cfg := mustLoad(t, mustRead(t, "testdata/full.yml"))
	tests := []struct {
		cmd  string
		want Permission
		ok   bool
	}{
		{CommandRetry, PermissionTriage, true},
		{CommandRollback, PermissionMaintain, true},
		{CommandApprove, PermissionAdmin, true},
		{"deploy", "", false},
	}
	for _, tt := range tests {
		got, ok := cfg.CommandPermission(tt.cmd)
		if got != tt.want || ok != tt.ok {
			t.Errorf("CommandPermission(%q) = %q, %v; want %q, %v", tt.cmd, got, ok, tt.want, tt.ok)
		}
	}
}

func TestPermissionIncludes(t *testing.T) {
	tests := []struct {
		name       string
		have, need Permission
		want       bool
	}{
		{"admin may do what write needs", PermissionAdmin, PermissionWrite, true},
		{"write may do what write needs", PermissionWrite, PermissionWrite, true},
		{"triage may not roll back when write is needed", PermissionTriage, PermissionWrite, false},
		{"maintain may not approve when admin is needed", PermissionMaintain, PermissionAdmin, false},
		{"GitHub's none includes nothing", "none", PermissionRead, false},
		{"an unknown requirement is never met", PermissionAdmin, "owner", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.have.Includes(tt.need); got != tt.want {
				t.Errorf("%q.Includes(%q) = %v", tt.have, tt.need, got)
			}
		})
	}
}

func TestAppForWorkflowNamesAnEnvironmentOnce(t *testing.T) {
	cfg := mustLoad(t, []byte(env("        workflows: [deploy.yml, .github/workflows/deploy.yml]\n")))
	want := []Deploy{{"checkout", "prod"}}
	if got := cfg.AppForWorkflow("deploy.yml"); !reflect.DeepEqual(got, want) {
		t.Errorf("a workflow listed twice in one environment: got %v, want %v", got, want)
	}
}
