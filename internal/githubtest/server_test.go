package githubtest

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"
)

// captureTB stands in for the test so that the failures the server reports can be
// asserted on instead of failing the test.
type captureTB struct {
	testing.TB
	mu     sync.Mutex
	failed []string
}

func (c *captureTB) Helper() {}

func (c *captureTB) Errorf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failed = append(c.failed, fmt.Sprintf(format, args...))
}

func (c *captureTB) Fatalf(format string, args ...any) { c.Errorf(format, args...) }

func (c *captureTB) failures() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.failed, "\n")
}

func newClient(t *testing.T, s *Server) *github.Client {
	t.Helper()
	return s.Client()
}

func TestURLHasATrailingSlashOnLoopback(t *testing.T) {
	s := NewServer(t)
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") || !strings.HasSuffix(s.URL(), "/") {
		t.Errorf("URL() = %q, want http://127.0.0.1:PORT/", s.URL())
	}
}

func TestServerFailsTheTestOnARequestGitHubWouldReject(t *testing.T) {
	ctb := &captureTB{TB: t}
	s := NewServer(ctb)
	client := newClient(t, s)
	ctx := context.Background()

	_, _, err := client.Checks.CreateCheckRun(ctx, "acme", "shop", github.CreateCheckRunOptions{
		Name: "ripcord/provenance", HeadSHA: "abc", Status: github.String("completed"), Conclusion: github.String("passed"),
	})
	var resp *github.ErrorResponse
	if !errors.As(err, &resp) || resp.Response.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("err = %v, want a 422", err)
	}
	if got := ctb.failures(); !strings.Contains(got, "checks/create") || !strings.Contains(got, `"conclusion"`) {
		t.Errorf("the test was failed with %q; want the operation and the field named", got)
	}
	if runs := s.CheckRuns("acme/shop"); len(runs) != 0 {
		t.Errorf("a rejected request created check runs: %+v", runs)
	}
	recs := s.Requests()
	if len(recs) != 1 || recs[0].Invalid == "" || recs[0].Status != http.StatusUnprocessableEntity {
		t.Errorf("recorded %+v; want one invalid request answered 422", recs)
	}
}

func TestServerFailsTheTestOnAPathGitHubDoesNotHave(t *testing.T) {
	ctb := &captureTB{TB: t}
	s := NewServer(ctb)
	resp, err := http.Post(s.URL()+"repos/acme/shop/actions/runs/1/retry", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("status = %d, want 404", resp.StatusCode)
	}
	if !strings.Contains(ctb.failures(), "GitHub has no operation POST /repos/acme/shop/actions/runs/1/retry") {
		t.Errorf("failures = %q", ctb.failures())
	}
}

func TestValidRequestsPassAndAreRecorded(t *testing.T) {
	s := NewServer(t)
	client := newClient(t, s)
	ctx := context.Background()
	if _, err := client.Actions.RerunFailedJobsByID(ctx, "acme", "shop", 30433642); err != nil {
		t.Fatal(err)
	}
	if _, _, err := client.PullRequests.List(ctx, "acme", "shop", &github.PullRequestListOptions{
		State: "all", Head: "acme:release-rollback-prod-0123abcd", Base: "main",
	}); err != nil {
		t.Fatal(err)
	}
	const rerun = "/repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs"
	if n := s.Count("POST", rerun); n != 1 {
		t.Errorf("Count(POST %s) = %d, want 1", rerun, n)
	}
	recs := s.Requests()
	if len(recs) != 2 {
		t.Fatalf("recorded %d requests, want 2", len(recs))
	}
	if recs[0].Route != rerun || recs[0].Params["run_id"] != "30433642" || recs[0].Status != http.StatusCreated {
		t.Errorf("first request recorded as %+v", recs[0])
	}
	if recs[1].Query.Get("head") != "acme:release-rollback-prod-0123abcd" || recs[1].OperationID != "pulls/list" {
		t.Errorf("second request recorded as %+v", recs[1])
	}
}

func TestHandleReplacesTheDefault(t *testing.T) {
	s := NewServer(t)
	s.Handle("POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs",
		func(w http.ResponseWriter, r *http.Request, p map[string]string) {
			writeError(w, http.StatusForbidden, "re-run of run "+p["run_id"]+" refused")
		})
	_, err := newClient(t, s).Actions.RerunFailedJobsByID(context.Background(), "acme", "shop", 9)
	if err == nil || !strings.Contains(err.Error(), "re-run of run 9 refused") {
		t.Errorf("err = %v, want the handler's refusal", err)
	}
}

func TestHandleRefusesAnOperationGitHubDoesNotHave(t *testing.T) {
	ctb := &captureTB{TB: t}
	s := NewServer(ctb)
	s.Handle("POST /repos/{owner}/{repo}/actions/runs/{run_id}/retry", func(http.ResponseWriter, *http.Request, map[string]string) {})
	if !strings.Contains(ctb.failures(), "GitHub has no such operation") {
		t.Errorf("failures = %q", ctb.failures())
	}
}

func TestAnOperationWithoutHandlerFailsTheTest(t *testing.T) {
	ctb := &captureTB{TB: t}
	s := NewServer(ctb)
	_, _, err := newClient(t, s).Repositories.ListReleases(context.Background(), "acme", "shop", nil)
	if err == nil {
		t.Errorf("a request nothing answers succeeded")
	}
	if !strings.Contains(ctb.failures(), "no handler for GET /repos/{owner}/{repo}/releases") {
		t.Errorf("failures = %q", ctb.failures())
	}
}

func TestEnterpriseBaseURLWorks(t *testing.T) {
	s := NewServer(t)
	client, err := github.NewClient(nil).WithEnterpriseURLs(s.URL(), s.URL())
	if err != nil {
		t.Fatal(err)
	}
	s.SetDefaultBranch("acme/shop", "trunk")
	repo, _, err := client.Repositories.Get(context.Background(), "acme", "shop")
	if err != nil {
		t.Fatal(err)
	}
	if repo.GetDefaultBranch() != "trunk" {
		t.Errorf("default_branch = %q, want trunk", repo.GetDefaultBranch())
	}
	if recs := s.Requests(); recs[0].Path != "/repos/acme/shop" {
		t.Errorf("recorded path %q, want it without /api/v3", recs[0].Path)
	}
}

func TestInstallationClientGetsATokenAndUsesIt(t *testing.T) {
	s := NewServer(t)
	tr, err := ghinstallation.New(http.DefaultTransport, AppID, InstallationID, AppPrivateKey(t))
	if err != nil {
		t.Fatal(err)
	}
	tr.BaseURL = strings.TrimSuffix(s.URL(), "/")
	client := github.NewClient(&http.Client{Transport: tr})
	client.BaseURL, _ = url.Parse(s.URL())
	if _, _, err := client.Repositories.Get(context.Background(), "acme", "shop"); err != nil {
		t.Fatal(err)
	}
	tokens := s.Tokens()
	if len(tokens) != 1 || !strings.HasPrefix(tokens[0].JWT, "Bearer ") {
		t.Fatalf("tokens = %+v; want one, asked for with the App's JWT", tokens)
	}
	recs := s.Requests()
	last := recs[len(recs)-1]
	if last.Route != "/repos/{owner}/{repo}" || last.Header.Get("Authorization") != "token "+tokens[0].Token {
		t.Errorf("repository read with Authorization %q, want the installation token", last.Header.Get("Authorization"))
	}
}

func TestManifestConversionHandsOutAKeyOnce(t *testing.T) {
	s := NewServer(t)
	client := newClient(t, s)
	ctx := context.Background()
	cfg, _, err := client.Apps.CompleteAppManifest(ctx, "code-1")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GetID() != AppID || cfg.GetWebhookSecret() != ManifestWebhookSecret {
		t.Errorf("app id %d, webhook secret %q", cfg.GetID(), cfg.GetWebhookSecret())
	}
	block, _ := pem.Decode([]byte(cfg.GetPEM()))
	if block == nil {
		t.Fatalf("pem is not PEM: %q", cfg.GetPEM())
	}
	if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err != nil {
		t.Errorf("pem is not an RSA key: %v", err)
	}
	if _, _, err := client.Apps.CompleteAppManifest(ctx, "code-1"); err == nil {
		t.Errorf("a manifest code converted twice")
	}
}

// HoldFirst holds the first request on its operation until released, and
// only the first: a second is answered meanwhile.
func TestHoldFirstHoldsTheFirstRequestUntilReleased(t *testing.T) {
	t.Parallel()
	s := NewServer(t)
	s.AddCheckRun("acme/checkout", CheckRun{Name: "ci", HeadSHA: strings.Repeat("a", 40), Status: "in_progress"})
	reached, release := s.HoldFirst("GET /repos/{owner}/{repo}/check-runs/{check_run_id}")
	get := func() <-chan int {
		out := make(chan int, 1)
		go func() {
			resp, err := http.Get(s.URL() + "repos/acme/checkout/check-runs/" + strconv.FormatInt(s.CheckRuns("acme/checkout")[0].ID, 10))
			if err != nil {
				t.Error(err)
				out <- 0
				return
			}
			resp.Body.Close()
			out <- resp.StatusCode
		}()
		return out
	}
	held := get()
	<-reached
	if code := <-get(); code != http.StatusOK {
		t.Errorf("the second request while the first is held: %d, want 200", code)
	}
	select {
	case code := <-held:
		t.Fatalf("the first request was answered (%d) before its release", code)
	default:
	}
	release()
	if code := <-held; code != http.StatusOK {
		t.Errorf("the first request once released: %d, want 200", code)
	}
}
