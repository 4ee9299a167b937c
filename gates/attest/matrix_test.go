package attest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/ripcord/ripcord/gates"
	"github.com/ripcord/ripcord/records"
)

// TestContentGatesAreAdvisoryOnAnEligibleRollback runs the real gates
// against the loopback registry under the class policy: provenance blocks
// whatever the PR is; sbom and image-scan block an ordinary promotion and
// only report on a rollback to a digest the records prove healthy.
func TestContentGatesAreAdvisoryOnAnEligibleRollback(t *testing.T) {
	srv := startRegistry(t)
	key := newSigner(t)
	// healthy: signed, provenance ok, a critical CVE, no SBOM (content fails).
	healthy := pushImage(t, srv, "acme/checkout")
	signedEntity(t, healthy).Sign(key.Signer, nil).Attest(key.Signer, "slsaprovenance", provenanceV02(builder, source), nil).
		Attest(key.Signer, "vuln", trivyScan([2]string{"CVE-2024-3094", "CRITICAL"}), nil).Push()
	// unsigned: integrity and content both fail.
	unsigned := pushImage(t, srv, "acme/checkout")
	at := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
	// Both ran: facts came (records.Record.Ran).
	failedAt, lastHealthy := at.Add(3*time.Hour), at.Add(time.Hour)
	history := []records.Record{
		{ReleaseID: "r3", App: "checkout", Environment: "prod", Cluster: "prod-eu", Image: unsigned.String(), Digest: unsigned.DigestStr(), State: records.StateFailed, CreatedAt: at.Add(2 * time.Hour), LastFactAt: &failedAt},
		{ReleaseID: "r2", App: "checkout", Environment: "prod", Cluster: "prod-eu", Image: healthy.String(), Digest: healthy.DigestStr(), State: records.StateSuperseded, HealthyAt: &at, CreatedAt: at.Add(-time.Hour), LastFactAt: &lastHealthy},
	}
	v := NewVerifier(Registries{}, 0)
	trust := Trust{Policy: key.policy()}
	gs := []gates.Gate{
		Provenance{Source: v, Trust: trust, BuilderID: builder, SourceRepository: source},
		SBOM{Source: v, Trust: trust},
		ImageScan{Source: v, Trust: trust, Severity: "high"},
	}
	cases := []struct {
		name  string
		image name.Digest
		title string
		want  map[string]gates.Conclusion
	}{
		{"eligible rollback with content findings", healthy, "bump checkout", map[string]gates.Conclusion{
			gates.NameProvenance: gates.Success, gates.NameSBOM: gates.Neutral, gates.NameImageScan: gates.Neutral}},
		{"ineligible Rollback: PR to a never-healthy unsigned digest", unsigned, "Rollback: checkout prod", map[string]gates.Conclusion{
			gates.NameProvenance: gates.Failure, gates.NameSBOM: gates.Failure, gates.NameImageScan: gates.Failure}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := gates.Assess(history, nil, gates.Subject{App: "checkout", Environment: "prod", Cluster: "prod-eu",
				Image: c.image.String(), Digest: c.image.DigestStr(), Title: c.title}, 5)
			for _, r := range gates.Evaluate(context.Background(), gs, s) {
				if r.Output.Conclusion != c.want[r.Gate] {
					t.Errorf("%s: %s (%s), want %s", r.Gate, r.Output.Conclusion, r.Output.Title, c.want[r.Gate])
				}
			}
		})
	}
	// Integrity blocks an eligible rollback too.
	s := gates.Assess(history, nil, gates.Subject{App: "checkout", Environment: "prod", Cluster: "prod-eu", Image: healthy.String(), Digest: healthy.DigestStr()}, 5)
	strict := Provenance{Source: v, Trust: trust, BuilderID: "https://github.com/other/builder", SourceRepository: source}
	if r := gates.Evaluate(context.Background(), []gates.Gate{strict}, s)[0]; r.Output.Conclusion != gates.Failure {
		t.Errorf("provenance with a wrong builder on an eligible rollback: %s, want failure", r.Output.Conclusion)
	}
}

// Provenance judges the one digest the release pins: a file whose image
// names an unsigned digest and whose digest field a signed one fails,
// instead of passing on the signed one while the other may be what runs.
func TestProvenanceFailsTwoDigests(t *testing.T) {
	srv := startRegistry(t)
	key := newSigner(t)
	signed := pushImage(t, srv, "acme/checkout")
	signedEntity(t, signed).Sign(key.Signer, nil).Attest(key.Signer, "slsaprovenance", provenanceV02(builder, source), nil).Push()
	unsigned := pushImage(t, srv, "acme/checkout")
	g := Provenance{Source: NewVerifier(Registries{}, 0), Trust: Trust{Policy: key.policy()}, BuilderID: builder, SourceRepository: source}
	s := gates.Subject{App: "checkout", Environment: "prod", Cluster: "prod-eu", Image: signed.String(), Digest: signed.DigestStr()}
	if r := gates.Evaluate(context.Background(), []gates.Gate{g}, s)[0]; r.Output.Conclusion != gates.Success {
		t.Fatalf("provenance of the signed digest: %s (%s), want success", r.Output.Conclusion, r.Output.Title)
	}
	s.Image = unsigned.String()
	r := gates.Evaluate(context.Background(), []gates.Gate{g}, s)[0]
	if r.Output.Conclusion != gates.Failure || !strings.Contains(r.Output.Title, "pins two digests") {
		t.Errorf("provenance of a file pinning %s in its image and the signed digest in its digest field: %s (%s), want failure",
			unsigned.DigestStr(), r.Output.Conclusion, r.Output.Title)
	}
}
