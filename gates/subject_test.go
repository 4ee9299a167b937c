package gates

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/records"
)

type verifier struct{ repository, sha string }

func (v *verifier) CommitVerification(_ context.Context, repository, sha string) (bool, string, error) {
	v.repository, v.sha = repository, sha
	return true, "valid", nil
}

// The digest's release record names the repository its commit lives in;
// commit-signing asks that repository, not the GitOps one the PR changes.
func TestAssessFindsTheRevisionAndItsRepository(t *testing.T) {
	rs := history()
	rs[1].Repository = "acme/checkout-src"
	s := Assess(rs, nil, Subject{Repository: "acme/gitops", App: "checkout", Environment: "prod", Cluster: "prod-eu",
		Image: "reg/checkout", Digest: oldDigest, Owner: "acme/checkout-src"}, 5)
	if s.GitRevision != "abcdef0123456789" || s.SourceRepository != "acme/checkout-src" {
		t.Fatalf("assessed revision %q in %q, want abcdef0123456789 in acme/checkout-src", s.GitRevision, s.SourceRepository)
	}
	v := &verifier{}
	if got := (CommitSigning{GitHub: v}).Evaluate(context.Background(), s); got.Outcome != Pass {
		t.Fatalf("commit-signing: %s %q", got.Outcome, got.Summary)
	}
	if v.repository != "acme/checkout-src" || v.sha != "abcdef0123456789" {
		t.Errorf("commit-signing asked %s@%s, want acme/checkout-src@abcdef0123456789", v.repository, v.sha)
	}
	// A monorepo (no repository on the record) asks the PR's.
	rs[1].Repository = ""
	s = Assess(rs, nil, Subject{Repository: "acme/gitops", App: "checkout", Environment: "prod", Cluster: "prod-eu", Image: "reg/checkout", Digest: oldDigest}, 5)
	if s.CodeRepository() != "acme/gitops" {
		t.Errorf("code repository %q, want the PR's acme/gitops", s.CodeRepository())
	}
}

// The rollback's own record (opened when its pull request was, with the
// target's digest) and pull requests never merged have not run: they must
// not push the target out of the window the rollback was decided with.
func TestAssessCountsOnlyReleasesThatRan(t *testing.T) {
	rs := history()
	for _, id := range []string{"rollback-of-r3", "r5", "r4"} {
		rs = append([]records.Record{{ReleaseID: id, App: "checkout", Environment: "prod", Cluster: "prod-eu",
			Image: "reg/checkout@" + oldDigest, Digest: oldDigest, State: records.StateOpened, CreatedAt: rs[0].CreatedAt.Add(time.Hour)}}, rs...)
	}
	s := Assess(rs, nil, Subject{Repository: "acme/gitops", App: "checkout", Environment: "prod", Cluster: "prod-eu",
		Image: "reg/checkout", Digest: oldDigest}, 2)
	if !s.EligibleRollback() || s.Eligibility.Evidence == nil || s.Eligibility.Evidence.ReleaseID != "r2" {
		t.Fatalf("eligibility = %+v, want eligible by r2, the second-newest release that ran", s.Eligibility)
	}
}

// A release file that pins only a tag names no content: the tag may have
// moved since the release that ran it healthy, and the content gates could
// not look at the image anyway. Only a digest makes the rollback eligible.
func TestAssessGrantsNoAdvisoryToATag(t *testing.T) {
	rs := history()
	rs[1].Image = "reg/checkout:v2@" + oldDigest
	s := Assess(rs, nil, Subject{Repository: "acme/gitops", App: "checkout", Environment: "prod", Cluster: "prod-eu",
		Image: "reg/checkout:v2"}, 5)
	if s.EligibleRollback() {
		t.Fatalf("a tag-only release file got the advisory treatment: %s", s.Eligibility.Reason)
	}
	if !strings.Contains(s.Eligibility.Reason, "pins no digest") {
		t.Errorf("reason %q should say the release file pins no digest", s.Eligibility.Reason)
	}
	c, _ := Conclude(Content, Errored("the release file pins no image digest, so there is nothing to verify"), s.EligibleRollback())
	if c != Failure {
		t.Errorf("image-scan that could not look at the image concluded %s, want failure", c)
	}
}

// An app's environment belongs to the repository of its first release
// (records.Store.Owner). A record another repository registered (two
// repositories racing for the first release, a record from before the
// rule, a rollback started from another repository's config) may name the
// digest too, newer, with a commit of its own choosing: commit-signing and
// sast must ask about the owner's commit, never about that one.
func TestAssessTakesTheRevisionFromTheOwnersRecordsOnly(t *testing.T) {
	rs := history()
	rs[1].Repository = "acme/checkout-src"
	foreign := records.Record{ReleaseID: "evil-1", App: "checkout", Environment: "prod", Cluster: "prod-eu",
		Repository: "mallory/fork", Image: "reg/checkout@" + oldDigest, Digest: oldDigest, GitRevision: "ee11ee11ee11ee11",
		State: records.StateOpened, CreatedAt: rs[0].CreatedAt.Add(time.Hour)}
	rs = append([]records.Record{foreign}, rs...)
	subject := Subject{Repository: "acme/gitops", App: "checkout", Environment: "prod", Cluster: "prod-eu",
		Image: "reg/checkout", Digest: oldDigest, Owner: "Acme/Checkout-Src"}
	s := Assess(rs, nil, subject, 5)
	if s.GitRevision != "abcdef0123456789" || s.SourceRepository != "acme/checkout-src" {
		t.Fatalf("assessed revision %q in %q (%s), want the owner's abcdef0123456789 in acme/checkout-src", s.GitRevision, s.SourceRepository, s.GitRevisionSource)
	}
	// Only the other repository's record names the digest: unknown, so
	// the gates that need the revision fail closed.
	s = Assess(rs[:2], nil, subject, 5) // evil-1 and r3
	if s.GitRevision != "" {
		t.Errorf("assessed revision %q in %q from another repository's record, want none", s.GitRevision, s.SourceRepository)
	}
	if got := (CommitSigning{GitHub: &verifier{}}).Evaluate(context.Background(), s); got.Outcome != Error {
		t.Errorf("commit-signing without the owner's revision: %s %q, want error", got.Outcome, got.Summary)
	}
}

// The check run says where the git revision came from: a release that
// was only registered (its pull request not merged) did not run the digest,
// and the summary must not say it did.
func TestAssessSaysWhetherTheRevisionsReleaseRan(t *testing.T) {
	rs := []records.Record{{ReleaseID: "pending-1", App: "checkout", Environment: "prod", Cluster: "prod-eu",
		Image: "reg/checkout@" + newDigest, Digest: newDigest, GitRevision: "0123456789abcdef", State: records.StateOpened}}
	s := Assess(rs, nil, Subject{Repository: "acme/gitops", App: "checkout", Environment: "prod", Cluster: "prod-eu",
		Image: "reg/checkout", Digest: newDigest}, 5)
	if s.GitRevision != "0123456789abcdef" || strings.Contains(s.GitRevisionSource, "ran") || !strings.Contains(s.GitRevisionSource, "not run") {
		t.Errorf("revision %q %q, want 0123456789abcdef from pending-1, saying it has not run", s.GitRevision, s.GitRevisionSource)
	}
	s = Assess(history(), nil, Subject{Repository: "acme/gitops", App: "checkout", Environment: "prod", Cluster: "prod-eu",
		Image: "reg/checkout", Digest: oldDigest}, 5)
	if !strings.Contains(s.GitRevisionSource, "from release r2, which ran this digest") {
		t.Errorf("revision source %q, want r2, which ran this digest", s.GitRevisionSource)
	}
}

// When the git revision is unknown, commit-signing and sast say why as it
// is: the check run must not claim "no release record names this digest"
// when the release file pins no digest, nor when a record does name it but
// is another repository's (and so not trusted for the commit).
func TestGatesSayWhyTheRevisionIsUnknown(t *testing.T) {
	base := Subject{Repository: "acme/gitops", App: "checkout", Environment: "prod", Cluster: "prod-eu", Image: "reg/checkout"}
	foreign := records.Record{ReleaseID: "evil-1", App: "checkout", Environment: "prod", Cluster: "prod-eu",
		Repository: "mallory/fork", Image: "reg/checkout@" + newDigest, Digest: newDigest, GitRevision: "ee11ee11ee11ee11",
		State: records.StateOpened}
	noRevision := records.Record{ReleaseID: "r9", App: "checkout", Environment: "prod", Cluster: "prod-eu",
		Image: "reg/checkout@" + newDigest, Digest: newDigest, State: records.StateOpened}
	tag := base
	tag.Image = "reg/checkout:v2"
	pinned := base
	pinned.Digest = newDigest
	owned := pinned
	owned.Owner = "acme/checkout-src"
	tests := []struct {
		name    string
		rs      []records.Record
		s       Subject
		want    []string
		notWant string
	}{
		{"a tag only", history(), tag, []string{"pins no digest"}, "no release record names"},
		{"no record of the digest", history(), pinned, []string{"no release record", "names digest " + newDigest[:19]}, ""},
		{"another repository's record", []records.Record{foreign}, owned,
			[]string{"evil-1", "mallory/fork", "acme/checkout-src"}, "no release record names"},
		{"a record without a revision", []records.Record{noRevision}, pinned, []string{"r9", "no git revision"}, "no release record names"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Assess(tt.rs, nil, tt.s, 5)
			if s.GitRevision != "" {
				t.Fatalf("revision %q, want none", s.GitRevision)
			}
			for _, g := range []Gate{CommitSigning{GitHub: &verifier{}}, SAST{Severity: "high"}} {
				v := g.Evaluate(context.Background(), s)
				if v.Outcome != Error {
					t.Errorf("%s: %s, want error", g.Name(), v.Outcome)
				}
				for _, w := range tt.want {
					if !strings.Contains(v.Summary, w) {
						t.Errorf("%s: %q does not say %q", g.Name(), v.Summary, w)
					}
				}
				if tt.notWant != "" && strings.Contains(v.Summary, tt.notWant) {
					t.Errorf("%s: %q says %q, which is not why", g.Name(), v.Summary, tt.notWant)
				}
			}
		})
	}
}

// The app's records elsewhere explain a "no" as the eligibility API does
// (where the digest ran healthy), but never make the digest eligible here
// nor name the commit it was built from: eligibility is per app,
// environment and cluster, and the revision comes only from this target's
// records.
func TestAssessSaysWhereElseTheDigestRanHealthy(t *testing.T) {
	healthy := time.Date(2026, 10, 2, 9, 0, 0, 0, time.UTC)
	elsewhere := []records.Record{
		{ReleaseID: "s7", App: "checkout", Environment: "staging", Cluster: "staging-eu", Image: "reg/checkout@" + newDigest,
			Digest: newDigest, GitRevision: "5ca1ab1e00000000", State: records.StateHealthy, HealthyAt: &healthy, CreatedAt: healthy},
		{ReleaseID: "other-app", App: "billing", Environment: "prod", Cluster: "prod-eu", Image: "reg/checkout@" + newDigest,
			Digest: newDigest, State: records.StateHealthy, HealthyAt: &healthy, CreatedAt: healthy},
	}
	subject := Subject{Repository: "acme/gitops", App: "checkout", Environment: "prod", Cluster: "prod-eu",
		Image: "reg/checkout", Digest: newDigest}
	s := Assess(history(), elsewhere, subject, 5)
	if s.EligibleRollback() {
		t.Fatalf("a digest healthy only in staging is eligible in prod: %+v", s.Eligibility)
	}
	want := "was healthy in staging/staging-eu (release s7), not in prod/prod-eu"
	if !strings.Contains(s.Eligibility.Reason, want) {
		t.Errorf("reason %q, want it to say %q", s.Eligibility.Reason, want)
	}
	if s.GitRevision != "" {
		t.Errorf("revision %q taken from staging's record, want none from another environment", s.GitRevision)
	}
	// Another app's record says nothing of this one.
	s = Assess(history(), elsewhere[1:], subject, 5)
	if strings.Contains(s.Eligibility.Reason, "was healthy in") {
		t.Errorf("reason %q cites another app's record", s.Eligibility.Reason)
	}
	// An eligible digest keeps its own answer.
	s = Assess(history(), elsewhere, Subject{App: "checkout", Environment: "prod", Cluster: "prod-eu", Image: "reg/checkout", Digest: oldDigest}, 5)
	if !s.EligibleRollback() || s.Eligibility.Evidence.ReleaseID != "r2" {
		t.Errorf("eligibility %+v, want eligible by r2", s.Eligibility)
	}
}

// A release file whose image carries one digest and whose digest field
// another pins no one digest: which runs depends on how it is deployed. It
// was judged by the digest field alone, so a PR could pin an eligible,
// signed digest there and another in the image, and get the advisory
// treatment and the commit of the eligible one.
func TestAssessJudgesNeitherOfTwoDigests(t *testing.T) {
	s := Assess(history(), nil, Subject{Repository: "acme/gitops", App: "checkout", Environment: "prod", Cluster: "prod-eu",
		Image: "reg/checkout@" + newDigest, Digest: oldDigest}, 5)
	if s.EligibleRollback() || !strings.Contains(s.Eligibility.Reason, "pins two digests") {
		t.Errorf("eligibility %+v, want not eligible, saying the file pins two digests", s.Eligibility)
	}
	if s.GitRevision != "" || !strings.Contains(s.GitRevisionUnknown, "pins two digests") {
		t.Errorf("revision %q (unknown: %q), want none, saying the file pins two digests", s.GitRevision, s.GitRevisionUnknown)
	}
	v := Values{Fields: fields}.Evaluate(context.Background(), Subject{Image: "reg.example.com/checkout@" + oldDigest, Digest: newDigest,
		ReleaseFile: "deploy/prod.yaml", ReleaseFileContent: []byte(goodRelease)})
	if v.Outcome != Fail || len(v.Findings) != 1 || v.Findings[0].Line != 6 || !strings.Contains(v.Summary, "pins two digests") {
		t.Errorf("values: %s %q %+v, want a failure on the digest's line 6", v.Outcome, v.Summary, v.Findings)
	}
	// One digest in both places is one digest.
	s = Assess(history(), nil, Subject{App: "checkout", Environment: "prod", Cluster: "prod-eu", Image: "reg/checkout@" + oldDigest, Digest: oldDigest}, 5)
	if !s.EligibleRollback() {
		t.Errorf("eligibility %+v: want eligible by r2, one digest in both places", s.Eligibility)
	}
}
