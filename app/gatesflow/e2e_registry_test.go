package gatesflow_test

import (
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/gatesflow"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/gates/attest/attesttest"
	"github.com/ripcord/ripcord/internal/testdb"
)

var signedConfig = gatesConfig(`provenance:
  keys: [.github/cosign.pub]
  builder_id: "`+attesttest.Builder+`"
  source_repository: "`+attesttest.Source+`"
sbom: {formats: [spdx]}
image_scan: {severity: high, allow: [CVE-2024-3094]}`, "prod")

func TestPullRequestPinningASignedImageGetsProvenanceSuccess(t *testing.T) {
	t.Parallel()
	reg := attesttest.StartRegistry(t)
	key := attesttest.NewSigner(t)
	img := attesttest.PushImage(t, reg, "acme/checkout")
	// Signed with provenance and a scan whose one critical CVE is allowed;
	// no SBOM, so sbom blocks this ordinary promotion.
	attesttest.Signed(t, img).Sign(key, nil).
		Attest(key, "slsaprovenance", attesttest.ProvenanceV02(attesttest.Builder, attesttest.Source), nil).
		Attest(key, "vuln", attesttest.TrivyScan([2]string{"CVE-2024-3094", "CRITICAL"}), nil).Push()

	e := e2etest.Start(t, testdb.MigratedURL(t, "sqlite"), app.Options{})
	e.CheckRequestsAtCleanup(t)
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", signedConfig)
	e.GitHub.PutFile(repo, "main", ".github/cosign.pub", string(key.PEM))
	releaseOf := func(digest string) string {
		return "image:\n  repository: " + img.Context().String() + "\n  digest: " + digest + "\n"
	}
	base := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", releaseOf(digestA))
	head := e.GitHub.PutFile(repo, "release-prod-1.5.0", "deploy/prod.yaml", releaseOf(img.DigestStr()))
	number := e.GitHub.OpenPullRequest(repo, "octocat", "release-prod-1.5.0", "main", "Release checkout 1.5.0")
	e.Install(repo)

	e.Deliver("pull_request", pullRequest(t, number, head, base, "release-prod-1.5.0"))
	want := map[string]string{
		"ripcord/provenance": "success",
		"ripcord/image-scan": "success",
		"ripcord/sbom":       "failure",
	}
	e.WaitFor("a check run per gate", 30*time.Second, func() bool { return len(completedRuns(e, head)) == len(want) })
	e.Settle()
	got := completedRuns(e, head)
	for name, conclusion := range want {
		if cr := got[name]; cr.Conclusion != conclusion {
			t.Errorf("%s: %s (%s), want %s", name, cr.Conclusion, cr.Title, conclusion)
		}
	}
	if s := got["ripcord/provenance"].Summary; !strings.Contains(s, attesttest.Builder) || !strings.Contains(s, ".github/cosign.pub") {
		t.Errorf("provenance summary does not name the key and builder:\n%s", s)
	}
	if s := got["ripcord/sbom"].Title; !strings.Contains(s, "no verified SBOM attestation") {
		t.Errorf("sbom title does not say why: %s", s)
	}
	if n := len(e.GitHub.CheckRuns(repo)); n != len(want) {
		t.Errorf("%d check runs, want one per gate (the in_progress run is completed in place)", n)
	}
}

func TestKeyMissingFromTheDefaultBranchFailsClosed(t *testing.T) {
	t.Parallel()
	reg := attesttest.StartRegistry(t)
	key := attesttest.NewSigner(t)
	img := attesttest.PushImage(t, reg, "acme/checkout")
	attesttest.Signed(t, img).Sign(key, nil).
		Attest(key, "slsaprovenance", attesttest.ProvenanceV02(attesttest.Builder, attesttest.Source), nil).Push()

	e := e2etest.Start(t, testdb.MigratedURL(t, "sqlite"), app.Options{})
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", signedConfig)
	base := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image:\n  repository: x\n  digest: "+digestA+"\n")
	// The PR brings its own key: it must not be the one that judges it.
	e.GitHub.PutFile(repo, "release-prod-1.5.0", ".github/cosign.pub", string(key.PEM))
	head := e.GitHub.PutFile(repo, "release-prod-1.5.0", "deploy/prod.yaml", "image:\n  repository: "+img.Context().String()+"\n  digest: "+img.DigestStr()+"\n")
	number := e.GitHub.OpenPullRequest(repo, "octocat", "release-prod-1.5.0", "main", "Release checkout 1.5.0")
	e.Install(repo)
	e.Deliver("pull_request", pullRequest(t, number, head, base, "release-prod-1.5.0"))
	e.WaitFor("the gates", 30*time.Second, func() bool { return len(completedRuns(e, head)) == 3 })
	cr := completedRuns(e, head)["ripcord/provenance"]
	if cr.Conclusion != "failure" || !strings.Contains(cr.Title, ".github/cosign.pub is not on the default branch") {
		t.Fatalf("provenance: %s %q, want failure naming the missing key", cr.Conclusion, cr.Title)
	}
}

// slowRegistry delays every registry request, as a registry far away does.
func slowRegistry(t *testing.T, delay time.Duration) *httptest.Server {
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			time.Sleep(delay)
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestSlowProvenanceShowsInProgressThenCompletesTheSameRun(t *testing.T) {
	t.Parallel()
	reg := slowRegistry(t, 100*time.Millisecond)
	key := attesttest.NewSigner(t)
	img := attesttest.PushImage(t, reg, "acme/checkout")
	attesttest.Signed(t, img).Sign(key, nil).
		Attest(key, "slsaprovenance", attesttest.ProvenanceV02(attesttest.Builder, attesttest.Source), nil).Push()

	e := e2etest.Start(t, testdb.MigratedURL(t, "sqlite"), app.Options{Gates: gatesflow.Options{SlowAfter: 20 * time.Millisecond}})
	const cfg = `version: 1
apps:
  checkout:
    gates:
      provenance: {keys: [.github/cosign.pub], builder_id: "` + attesttest.Builder + `"}
      process: {qa: {labels: [qa-approved]}}
    environments:
      prod:
        rollback: {mode: pull-request, file: deploy/prod.yaml, fields: {image: image.repository, digest: image.digest}}
`
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", cfg)
	e.GitHub.PutFile(repo, "main", ".github/cosign.pub", string(key.PEM))
	base := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", "image:\n  repository: x\n  digest: "+digestA+"\n")
	head := e.GitHub.PutFile(repo, "release-prod-1.5.0", "deploy/prod.yaml", "image:\n  repository: "+img.Context().String()+"\n  digest: "+img.DigestStr()+"\n")
	number := e.GitHub.OpenPullRequest(repo, "octocat", "release-prod-1.5.0", "main", "Release checkout 1.5.0")
	e.Install(repo)
	e.Deliver("pull_request", pullRequest(t, number, head, base, "release-prod-1.5.0"))
	e.WaitFor("both gates", 30*time.Second, func() bool { return len(completedRuns(e, head)) == 2 })
	e.Settle()

	if cr := completedRuns(e, head)["ripcord/provenance"]; cr.Conclusion != "success" {
		t.Fatalf("provenance: %s %q", cr.Conclusion, cr.Title)
	}
	var created []string
	for _, r := range e.GitHub.Requests() {
		if r.Method == http.MethodPost && r.Route == "/repos/{owner}/{repo}/check-runs" {
			var body struct{ Name, Status string }
			_ = json.Unmarshal(r.Body, &body)
			created = append(created, body.Name+" "+body.Status)
		}
	}
	want := []string{"ripcord/provenance in_progress", "ripcord/qa completed"}
	if strings.Join(created, ", ") != strings.Join(want, ", ") {
		t.Errorf("check runs created: %v, want %v (provenance shown in progress, then completed in place; qa, quick, written once)", created, want)
	}
	if n := len(e.GitHub.CheckRuns(repo)); n != 2 {
		t.Errorf("%d check runs, want 2", n)
	}
}
