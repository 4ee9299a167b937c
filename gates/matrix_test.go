package gates

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/records"
)

const (
	oldDigest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	badDigest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	newDigest = "sha256:3333333333333333333333333333333333333333333333333333333333333333"
)

// fixed is a gate with a canned verdict.
type fixed struct {
	name  string
	class Class
	v     Verdict
}

func (f fixed) Name() string                              { return f.name }
func (f fixed) Class() Class                              { return f.class }
func (f fixed) Evaluate(context.Context, Subject) Verdict { return f.v }

// history: the old digest was healthy in checkout/prod/prod-eu two releases
// ago; the bad digest is the current, failed release.
func history() []records.Record {
	healthy := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
	// Both ran: facts came (records.Record.Ran).
	failedAt, lastHealthy := healthy.Add(3*time.Hour), healthy.Add(time.Hour)
	return []records.Record{
		{ReleaseID: "r3", App: "checkout", Environment: "prod", Cluster: "prod-eu", Image: "reg/checkout@" + badDigest, Digest: badDigest, State: records.StateFailed, CreatedAt: healthy.Add(2 * time.Hour), LastFactAt: &failedAt},
		{ReleaseID: "r2", App: "checkout", Environment: "prod", Cluster: "prod-eu", Image: "reg/checkout@" + oldDigest, Digest: oldDigest, GitRevision: "abcdef0123456789", State: records.StateSuperseded, HealthyAt: &healthy, CreatedAt: healthy.Add(-time.Hour), LastFactAt: &lastHealthy},
	}
}

func TestClassPolicyMatrix(t *testing.T) {
	prs := []struct {
		name     string
		title    string
		branch   string
		body     string
		digest   string
		advisory bool
	}{
		{"ordinary promotion", "Release checkout 1.4.0", "release-prod-1.4.0", "", newDigest, false},
		{"eligible rollback", "Rollback: checkout prod to abcdef01", "release-rollback-prod-abcdef01", "Ripcord-Release-Kind: rollback", oldDigest, true},
		{"ineligible Rollback: PR pinning a never-healthy digest", "Rollback: checkout prod", "release-rollback-prod-22222222", "Ripcord-Release-Kind: rollback", badDigest, false},
		{"hand-made PR pinning an eligible digest", "bump checkout", "alice/pin-old", "", oldDigest, true},
	}
	gateSets := []struct {
		name      string
		integrity Outcome
		content   Outcome
	}{
		{"integrity fails", Fail, Pass},
		{"content fails", Pass, Fail},
		{"both pass", Pass, Pass},
		{"content cannot decide", Pass, Error},
		{"integrity cannot decide", Error, Pass},
	}
	for _, pr := range prs {
		for _, set := range gateSets {
			t.Run(pr.name+"/"+set.name, func(t *testing.T) {
				s := Assess(history(), nil, Subject{
					App: "checkout", Environment: "prod", Cluster: "prod-eu", Image: "reg/checkout@" + pr.digest, Digest: pr.digest,
					Title: pr.title, HeadBranch: pr.branch, Body: pr.body,
				}, 5)
				if s.EligibleRollback() != pr.advisory {
					t.Fatalf("eligible = %v, want %v (%s)", s.EligibleRollback(), pr.advisory, s.Eligibility.Reason)
				}
				gs := []Gate{
					fixed{NameProvenance, Integrity, Verdict{Outcome: set.integrity, Summary: "integrity said " + string(set.integrity)}},
					fixed{NameImageScan, Content, Verdict{Outcome: set.content, Summary: "content said " + string(set.content)}},
					fixed{NameQA, Process, Passed("label present")},
				}
				got := map[string]Conclusion{}
				for _, r := range Evaluate(context.Background(), gs, s) {
					got[r.Gate] = r.Output.Conclusion
				}
				want := map[string]Conclusion{NameProvenance: Success, NameImageScan: Success, NameQA: Success}
				if set.integrity != Pass {
					want[NameProvenance] = Failure // integrity blocks, rollback or not
				}
				if set.content != Pass {
					want[NameImageScan] = Failure
					if pr.advisory {
						want[NameImageScan] = Neutral
					}
				}
				for g, c := range want {
					if got[g] != c {
						t.Errorf("%s: conclusion %q, want %q", g, got[g], c)
					}
				}
			})
		}
	}
}

func TestProcessGateFailureBlocksEligibleRollback(t *testing.T) {
	s := Assess(history(), nil, Subject{App: "checkout", Environment: "prod", Cluster: "prod-eu", Image: "reg/checkout@" + oldDigest, Digest: oldDigest}, 5)
	if c, _ := Conclude(Process, Failed("no change reference"), s.EligibleRollback()); c != Failure {
		t.Fatalf("process gate on an eligible rollback concluded %q, want failure: process gates are unchanged on rollbacks", c)
	}
}

func TestAdvisorySummaryNamesTheRecord(t *testing.T) {
	s := Assess(history(), nil, Subject{App: "checkout", Environment: "prod", Cluster: "prod-eu", Image: "reg/checkout@" + oldDigest, Digest: oldDigest}, 5)
	out := Render(NameImageScan, Content, Failed("1 critical vulnerability", Finding{Severity: "critical", ID: "CVE-2024-3094", Message: "xz backdoor"}), s)
	for _, want := range []string{AdvisoryWords, "r2", "CVE-2024-3094", "| critical |"} {
		if !strings.Contains(out.Summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, out.Summary)
		}
	}
	if !strings.HasPrefix(out.Title, AdvisoryWords) {
		t.Errorf("title %q does not start with %q", out.Title, AdvisoryWords)
	}
}

func TestOrdinaryPromotionSummarySaysBlocking(t *testing.T) {
	s := Assess(history(), nil, Subject{App: "checkout", Environment: "prod", Cluster: "prod-eu", Image: "reg/checkout@" + badDigest, Digest: badDigest, Title: "Rollback: checkout"}, 5)
	out := Render(NameSBOM, Content, Failed("no SBOM attestation"), s)
	if !strings.Contains(out.Summary, "Ordinary promotion, blocking") || strings.Contains(out.Summary, AdvisoryWords) {
		t.Fatalf("summary of an ineligible Rollback: PR should say it is blocking:\n%s", out.Summary)
	}
}

func TestGitRevisionComesFromTheRecordOfTheDigest(t *testing.T) {
	s := Assess(history(), nil, Subject{App: "checkout", Environment: "prod", Cluster: "prod-eu", Image: "reg/checkout@" + oldDigest, Digest: oldDigest}, 5)
	if s.GitRevision != "abcdef0123456789" {
		t.Fatalf("git revision %q, want the one release r2 recorded", s.GitRevision)
	}
}

func TestPanickingGateFailsClosed(t *testing.T) {
	rs := Evaluate(context.Background(), []Gate{panicky{}}, Subject{})
	if rs[0].Verdict.Outcome != Error || rs[0].Output.Conclusion != Failure {
		t.Fatalf("panicking gate: %+v, want error / failure", rs[0])
	}
}

type panicky struct{}

func (panicky) Name() string                              { return NameValues }
func (panicky) Class() Class                              { return Integrity }
func (panicky) Evaluate(context.Context, Subject) Verdict { panic("nil map") }
