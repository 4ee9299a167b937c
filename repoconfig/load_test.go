package repoconfig

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func mustLoad(t *testing.T, data []byte) *Config {
	t.Helper()
	cfg, problems := Load(data)
	for _, p := range problems {
		t.Errorf("unexpected problem: %s", p.Format("ripcord.yml"))
	}
	if cfg == nil {
		t.Fatal("Load returned no config")
	}
	return cfg
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestDesignExampleLoadsAsWritten(t *testing.T) {
	cfg := mustLoad(t, mustRead(t, "testdata/design-example.yml"))

	staging, ok := cfg.Environment("checkout", "staging")
	if !ok {
		t.Fatal("no checkout/staging")
	}
	wantStaging := Rollback{Mode: ModeWorkflow, Workflow: "deploy.yml", Input: "version"}
	if staging.Cluster != "staging-eu" || !reflect.DeepEqual(staging.Workflows, []string{"deploy.yml"}) ||
		staging.Rollback != wantStaging {
		t.Errorf("staging = %+v", staging)
	}
	prod, _ := cfg.Environment("checkout", "prod")
	wantProd := Rollback{
		Mode: ModePullRequest, Repository: "acme/gitops", Base: "main", File: "apps/checkout/prod/release.yaml",
		Fields: Fields{Image: "image.repository", Digest: "image.digest", ReleaseID: "release.id"},
	}
	if prod.Rollback != wantProd {
		t.Errorf("prod rollback = %+v, want %+v", prod.Rollback, wantProd)
	}
	wantRecovery := Recovery{
		MaxRetries: 3, InitialBackoff: 10 * time.Second, Multiplier: 2, MaxBackoff: 5 * time.Minute,
		FailureTypes: map[string][]string{"build_failure": {"build*", "compile*"}, "test_failure": {"test*"}},
	}
	if got := cfg.RecoveryFor("checkout"); !reflect.DeepEqual(got, wantRecovery) {
		t.Errorf("RecoveryFor = %+v, want %+v", got, wantRecovery)
	}
	if cfg.Commands != (Commands{Retry: PermissionWrite, Rollback: PermissionWrite, Approve: PermissionMaintain}) {
		t.Errorf("commands = %+v", cfg.Commands)
	}
}

// The example in DESIGN.md is a promise to users; testdata keeps a copy so
// the package tests stand alone, and this test keeps the copy honest.
func TestDesignExampleCopyMatchesDesignDoc(t *testing.T) {
	doc, err := os.ReadFile("../../shared/DESIGN.md")
	if os.IsNotExist(err) {
		t.Skip("shared/DESIGN.md is not beside the repository")
	}
	if err != nil {
		t.Fatal(err)
	}
	start := bytes.Index(doc, []byte("## Repository config — an example"))
	if start < 0 {
		t.Fatal("DESIGN.md has no 'Repository config — an example' section")
	}
	rest := doc[start:]
	open := bytes.Index(rest, []byte("```yaml\n"))
	if open < 0 {
		t.Fatal("the example section has no yaml block")
	}
	rest = rest[open+len("```yaml\n"):]
	example := rest[:bytes.Index(rest, []byte("```"))]
	if !bytes.Equal(example, mustRead(t, "testdata/design-example.yml")) {
		t.Errorf("testdata/design-example.yml differs from DESIGN.md's example:\n%s", example)
	}
	mustLoad(t, example)
}

func TestDefaultsFillWhatTheFileLeavesOut(t *testing.T) {
	cfg := mustLoad(t, []byte(`version: 1
apps:
  checkout:
    gates:
      sast: {}
      sbom: {}
      image_scan: {}
      process: {policy_validation: {url: "https://policy.example.com"}}
    environments:
      prod:
        rollback: {mode: kubernetes}
`))
	if got := cfg.RecoveryFor("checkout"); got.MaxRetries != 3 || got.InitialBackoff != 10*time.Second ||
		got.Multiplier != 2 || got.MaxBackoff != 300*time.Second || len(got.FailureTypes) != 0 {
		t.Errorf("recovery defaults = %+v", got)
	}
	for _, cmd := range []string{CommandRetry, CommandRollback, CommandApprove} {
		if p, _ := cfg.CommandPermission(cmd); p != PermissionWrite {
			t.Errorf("%s needs %q by default, want write", cmd, p)
		}
	}
	// stall_after left out is zero: the server's setting applies.
	if cfg.Eligibility.Window != 5 || cfg.StallAfter != 0 {
		t.Errorf("eligibility %+v, stall_after %s", cfg.Eligibility, cfg.StallAfter)
	}
	prod, _ := cfg.Environment("checkout", "prod")
	if prod.Rollback.Namespace != "checkout" || prod.Rollback.Deployment != "checkout" || prod.Rollback.Container != "" {
		t.Errorf("kubernetes rollback defaults = %+v, want namespace and deployment named after the app", prod.Rollback)
	}
	g, _ := cfg.GatesFor("checkout", "prod")
	if g.SAST.Severity != "error" || g.ImageScan.Severity != "critical" ||
		!reflect.DeepEqual(g.SBOM.Formats, []string{"spdx", "cyclonedx"}) ||
		g.Process.PolicyValidation.Timeout != 30*time.Second {
		t.Errorf("gate defaults = %+v", g)
	}
	if g.Provenance != nil || g.CommitSigning != nil || g.Process.QA != nil {
		t.Errorf("gates the file did not name are on: %+v", g)
	}
}

func TestEveryKeyLoads(t *testing.T) {
	cfg := mustLoad(t, mustRead(t, "testdata/full.yml"))
	if cfg.StallAfter != 30*time.Minute || cfg.Eligibility.Window != 10 {
		t.Errorf("stall_after %s, window %d", cfg.StallAfter, cfg.Eligibility.Window)
	}
	staging, _ := cfg.Environment("checkout", "staging")
	if staging.Rollback != (Rollback{Mode: ModeKubernetes, Namespace: "shop", Deployment: "checkout-api", Container: "app"}) {
		t.Errorf("explicit kubernetes names were replaced: %+v", staging.Rollback)
	}
	prod, _ := cfg.Environment("checkout", "prod")
	if prod.Rollout == nil || len(prod.Rollout.Content) != 4 || prod.Targets == nil || len(prod.Targets.Content) != 1 {
		t.Errorf("rollout/targets nodes not kept raw: %v %v", prod.Rollout, prod.Targets)
	}
	a := cfg.Apps["checkout"]
	p := a.Gates.Provenance
	if p == nil || len(p.Identities) != 1 || p.Identities[0].Issuer != "https://token.actions.githubusercontent.com" ||
		p.TrustedRoot != ".github/trusted_root.json" || !reflect.DeepEqual(p.Keys, []string{"cosign.pub"}) {
		t.Errorf("provenance = %+v", p)
	}
	if a.Gates.Process.ITSM.BodyField != "CHG[0-9]{7}" || a.Gates.ImageScan.Severity != "high" ||
		!reflect.DeepEqual(a.Gates.ImageScan.Allow, []string{"CVE-2024-3094", "GHSA-abcd-1234-wxyz"}) {
		t.Errorf("gates = %+v", a.Gates)
	}
	if got := cfg.AppNames(); !reflect.DeepEqual(got, []string{"checkout", "payments"}) {
		t.Errorf("AppNames = %v, want file order", got)
	}
	if got := a.EnvironmentNames(); !reflect.DeepEqual(got, []string{"staging", "prod"}) {
		t.Errorf("EnvironmentNames = %v, want file order", got)
	}
}

func TestAnchorsAreCheckedLikeWrittenBlocks(t *testing.T) {
	doc := `version: 1
apps:
  checkout:
    environments:
      staging:
        rollback: &k8s {mode: kubernetes, namespace: shop}
      prod:
        rollback: *k8s
  broken:
    environments:
      prod:
        rollback: &bad {mode: kubernetes, file: x.yaml}
      staging:
        rollback: *bad
`
	_, problems := Load([]byte(doc))
	if len(problems) != 2 {
		t.Fatalf("want the bad anchor reported for both uses, got %v", problems)
	}
	good := `version: 1
apps:
  checkout:
    environments:
      staging:
        rollback: &k8s {mode: kubernetes, namespace: shop}
      prod:
        rollback: *k8s
`
	cfg := mustLoad(t, []byte(good))
	if e, _ := cfg.Environment("checkout", "prod"); e.Rollback.Namespace != "shop" {
		t.Errorf("alias not followed: %+v", e.Rollback)
	}
}

func TestValidateReturnsNothingForAValidFile(t *testing.T) {
	if got := Validate(Path, mustRead(t, "testdata/full.yml")); len(got) != 0 {
		t.Errorf("Validate = %q", got)
	}
}

func TestAliasBombIsStoppedNotWalked(t *testing.T) {
	// 20 apps × 20 environments × 500 workflows through anchors: 200,000
	// values from a file of a few kilobytes, every one of them valid.
	var b bytes.Buffer
	b.WriteString("version: 1\napps:\n  a0: &a {environments: {e0: &e {workflows: [&s deploy.yml")
	b.WriteString(strings.Repeat(", *s", 499))
	b.WriteString("]}")
	for i := 1; i < 20; i++ {
		fmt.Fprintf(&b, ", e%d: *e", i)
	}
	b.WriteString("}}\n")
	for i := 1; i < 20; i++ {
		fmt.Fprintf(&b, "  a%d: *a\n", i)
	}
	_, problems := Load(b.Bytes())
	if len(problems) != 1 || !strings.Contains(problems[0].Message, "repeats anchors too often") {
		t.Fatalf("want only the budget problem, got %v", problems)
	}
}
