package rollbackflow_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/records"
)

const (
	appRepo     = "acme/checkout" // the OIDC issuer's default repository
	gitops      = "acme/gitops"
	releaseFile = "apps/checkout/prod/release.yaml"
	// wait bounds how long a failure takes to show: CI shares two cores
	// with the whole suite, and ran these packages up to six times slower.
	wait = 45 * time.Second
)

const repoConfig = `version: 1
apps:
  checkout:
    environments:
      prod:
        cluster: prod-eu
        workflows: [deploy.yml]
        rollback:
          mode: pull-request
          repository: acme/gitops
          base: main
          file: apps/checkout/prod/release.yaml
          fields: {image: image.ref, digest: image.digest, release_id: release.id}
`

const releaseYAML = `# checkout in prod: written by the release pipeline
release:
  id: r3:prod-eu/prod # machine-owned
image:
  ref: ghcr.io/acme/checkout:v3
  digest: sha256:` + "3333333333333333333333333333333333333333333333333333333333333333" + `
replicas: 3
`

// scene is a running server with the app and GitOps repositories installed
// and three releases of checkout in prod: r1 and r2 healthy, r3 failed.
type scene struct {
	*e2etest.Env
	configHead string
}

func newScene(t *testing.T, dbURL string) *scene {
	t.Helper()
	return newSceneWith(t, dbURL, app.Options{})
}

// newSceneWith is newScene with the server's options opts.
func newSceneWith(t *testing.T, dbURL string, opts app.Options) *scene {
	t.Helper()
	return sceneOn(t, e2etest.Start(t, dbURL, opts))
}

// sceneOn sets up newScene's repositories and releases with server e.
func sceneOn(t *testing.T, e *e2etest.Env) *scene {
	t.Helper()
	s := &scene{Env: e, configHead: e.GitHub.PutFile(appRepo, "main", ".github/ripcord.yml", repoConfig)}
	e.GitHub.PutFile(gitops, "main", releaseFile, releaseYAML)
	e.Install(appRepo)
	e.Install(gitops)
	e.CheckRequestsAtCleanup(t)
	s.threeReleases("checkout", "r", 7000)
	return s
}

// threeReleases posts the facts of three deploys of app to prod from
// workflow runs firstRun+1 to +3, built from sha(1) to sha(3): releases
// <prefix>1 and <prefix>2 healthy, <prefix>3 failed.
func (s *scene) threeReleases(app, prefix string, firstRun int64) {
	s.T.Helper()
	for i, status := range []string{"success", "success", "failed"} {
		n := i + 1
		s.appFact(app, "prod", firstRun+int64(n), status, fmt.Sprintf("%s%d:prod-eu/prod", prefix, n),
			strings.ReplaceAll(image(n), "checkout", app), sha(n))
	}
}

func digest(n int) string { return "sha256:" + strings.Repeat(fmt.Sprint(n), 64) }
func image(n int) string  { return fmt.Sprintf("ghcr.io/acme/checkout:v%d@%s", n, digest(n)) }
func sha(n int) string    { return strings.Repeat(fmt.Sprintf("%x", 10+n), 40) }

// fact posts the task fact the bundled action posts at the end of a deploy.
func (s *scene) fact(runID int64, status, release, img, commit string) {
	s.T.Helper()
	s.factIn("prod", runID, status, release, img, commit)
}

// factIn is fact for checkout in environment (cluster prod-eu).
func (s *scene) factIn(environment string, runID int64, status, release, img, commit string) {
	s.T.Helper()
	s.appFact("checkout", environment, runID, status, release, img, commit)
}

// appFact is fact for app in environment (cluster prod-eu).
func (s *scene) appFact(app, environment string, runID int64, status, release, img, commit string) {
	s.T.Helper()
	f := map[string]any{"source": "task", "repository": appRepo, "workflow_run_id": runID, "run_attempt": 1,
		"status": status, "app": app, "environment": environment, "cluster": "prod-eu", "release_id": release,
		"observed_at": time.Now().UTC().Format(time.RFC3339Nano)}
	if img != "" {
		f["images"], f["metadata"] = []string{img}, map[string]string{"commit": commit}
	}
	if status == "failed" {
		f["failure_type"] = "deployment_failure"
	}
	s.Fact(f)
	time.Sleep(2 * time.Millisecond) // distinct created_at: eligibility orders by it
}

func (s *scene) release(id string) (records.Record, bool) {
	s.T.Helper()
	status, body := s.Do("GET", "/api/v1/releases/"+url.PathEscape(id), "", nil)
	if status != 200 {
		return records.Record{}, false
	}
	var r records.Record
	if err := json.Unmarshal(body, &r); err != nil {
		s.T.Fatal(err)
	}
	return r, true
}

func (s *scene) waitRelease(id string) records.Record {
	s.T.Helper()
	s.WaitFor("release "+id+" with its pull request", wait, func() bool {
		r, ok := s.release(id)
		return ok && r.PRNumber > 0
	})
	r, _ := s.release(id)
	return r
}

// gitopsCalls are the App's requests to the GitOps repository.
func (s *scene) gitopsCalls() []string {
	var out []string
	for _, r := range s.GitHub.Requests() {
		if strings.HasPrefix(r.Path, "/repos/"+gitops+"/") {
			out = append(out, e2etest.Call(r))
		}
	}
	return out
}

// git runs the real git binary.
func git(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = t.TempDir()
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+t.TempDir())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

// startQueued reports whether a rollout_start job names releaseID.
func startQueued(t *testing.T, s *scene, releaseID string) bool {
	t.Helper()
	// River keeps a job's args as SQLite's binary JSON, or as jsonb.
	q := `SELECT COUNT(*) FROM river_job WHERE kind = 'rollout_start' AND json_extract(args, '$.release_id') = $1`
	if strings.HasPrefix(s.DBURL, "postgres") {
		q = `SELECT COUNT(*) FROM river_job WHERE kind = 'rollout_start' AND args ->> 'release_id' = $1`
	}
	return s.Int(q, releaseID) == 1
}

// lastAttemptIsTheSecond makes the rollback pull request job, the one not
// finished, give up at its second attempt rather than its tenth, so a test
// need not wait for ten. It lowers the job's max_attempts as soon as the job
// is queued, whatever it is doing: an attempt running then read ten and is
// retried when it fails, and the first attempt that starts after it, the
// second or a later one, is the last. Nothing has to be caught in passing:
// River makes a failed job whose retry is due within its scheduler's
// interval (5 s) available at once, so the job shows as retryable only
// after its fourth failure, and as available only for its short wait
// before the next attempt, which a slowed poll misses.
func (s *scene) lastAttemptIsTheSecond(db *store.DB) {
	s.T.Helper()
	s.WaitFor("the rollback pull request job", wait, func() bool {
		res, err := db.Write.Exec(`UPDATE river_job SET max_attempts = 2
			WHERE kind = 'rollback_pull_request' AND state NOT IN ('completed', 'discarded', 'cancelled')`)
		if err != nil {
			s.T.Fatal(err)
		}
		n, _ := res.RowsAffected()
		return n == 1
	})
}

// failedAttempts is how many attempts of the rollback pull request job have
// failed (River keeps each one's error). Unlike the job's state, which
// changes from available to running and back within a second or two
// while the job retries, the count only grows: a test waiting for a
// failure cannot miss it.
func (s *scene) failedAttempts() int {
	s.T.Helper()
	js := s.Jobs("rollback_pull_request")
	if len(js) != 1 {
		s.T.Fatalf("%d rollback pull request jobs, want 1", len(js))
	}
	return len(js[0].Errors)
}

// jobKinds are the jobs Settle waits for.
var jobKinds = []string{"rollback_pull_request", "comment_reply", "comment_reaction", "config_check", "delivery"}

func logCalls(t *testing.T, s *scene) {
	t.Helper()
	t.Logf("GitHub calls in order:\n  %s", strings.Join(s.Sequence(), "\n  "))
}
