package rolloutflow_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

const (
	repo = "acme/checkout"
	// wait is generous: CI shares two cores with the whole suite.
	wait = 45 * time.Second
)

var headSHA = strings.Repeat("c", 40)

// Two stages without bake, an approval after the canary.
const e2eConfig = `version: 1
apps:
  checkout:
    environments:
      prod:
        cluster: prod-eu
        targets:
          - {host: eu1-a-01, labels: {region: eu-1, az: eu-1a, canary: "true"}}
          - {host: eu1-b-01, labels: {region: eu-1, az: eu-1b}}
        rollout:
          waves:
            - {name: canary, select: "canary=true"}
            - {name: rest, select: "canary!=true"}
          approvals_between: [canary]
`

type scene struct {
	*e2etest.Env
	id string
}

func (s *scene) status() rolloutflow.StatusJSON {
	s.T.Helper()
	code, body := s.Do("GET", "/api/v1/rollouts/"+url.PathEscape(s.id), "", nil)
	if code != http.StatusOK {
		s.T.Fatalf("GET rollout answered %d: %s", code, body)
	}
	var st rolloutflow.StatusJSON
	if err := json.Unmarshal(body, &st); err != nil {
		s.T.Fatal(err)
	}
	return st
}

// check is the rollout's newest check run: the one GitHub shows. Its
// external id is the rollout's, then the pause it shows, if any.
func (s *scene) check() (githubtest.CheckRun, bool) {
	var last githubtest.CheckRun
	found := false
	for _, cr := range s.GitHub.CheckRuns(repo) {
		if id, _, _ := strings.Cut(cr.ExternalID, "/"); cr.Name == rolloutflow.CheckName && id == s.id {
			last, found = cr, true
		}
	}
	return last, found
}

// finish completes the n-th dispatch's run with success.
func (s *scene) finish(n int) {
	s.T.Helper()
	s.WaitFor("dispatch "+itoa(n), wait, func() bool { return len(s.GitHub.Dispatches(repo)) >= n })
	d := s.GitHub.Dispatches(repo)[n-1]
	s.Deliver("workflow_run", s.WorkflowRun(e2etest.Run{Repository: repo, ID: d.RunID, Attempt: 1, Conclusion: "success", HeadSHA: headSHA}))
}

func (s *scene) click(user string) {
	s.T.Helper()
	s.Deliver("check_run", s.clickBody(user))
}

// clickBody is the requested_action delivery of user's click on the
// Approve button of the check run GitHub shows now: GitHub's payload
// carries the check run as it stands, its external id with it.
func (s *scene) clickBody(user string) []byte {
	s.T.Helper()
	shown, ok := s.check()
	if !ok {
		s.T.Fatalf("rollout %s has no check run to click", s.id)
	}
	return clickOn(s.T, shown, user)
}

// clickOn is the requested_action delivery of user's click on cr's
// Approve button.
func clickOn(t testing.TB, cr githubtest.CheckRun, user string) []byte {
	t.Helper()
	return e2etest.Edit(t, githubtest.LoadPayload(t, "check_run", "requested_action.payload.json"), func(m map[string]any) {
		c := m["check_run"].(map[string]any)
		c["id"], c["name"], c["external_id"], c["head_sha"] = cr.ID, rolloutflow.CheckName, cr.ExternalID, headSHA
		c["status"], c["conclusion"] = cr.Status, nil
		if cr.Conclusion != "" {
			c["conclusion"] = cr.Conclusion
		}
		c["started_at"] = cr.StartedAt.UTC().Format(time.RFC3339)
		c["completed_at"] = nil
		if !cr.CompletedAt.IsZero() {
			c["completed_at"] = cr.CompletedAt.UTC().Format(time.RFC3339)
		}
		m["requested_action"] = map[string]any{"identifier": rolloutflow.ApproveAction}
		r := m["repository"].(map[string]any)
		r["full_name"], r["name"] = repo, "checkout"
		m["sender"].(map[string]any)["login"] = user
		m["installation"] = map[string]any{"id": githubtest.InstallationID}
	})
}

// settle waits until no delivery and no job is due; jobs scheduled later
// (a release's stall check, the approval's expiry) stay.
func (s *scene) settle() {
	s.T.Helper()
	s.WaitFor("deliveries and due jobs to settle", wait, func() bool {
		return s.Int(`SELECT COUNT(*) FROM deliveries WHERE state = 'queued'`) == 0 &&
			s.Int(`SELECT COUNT(*) FROM river_job WHERE state IN ('available', 'running', 'retryable')`) == 0
	})
}

func itoa(n int) string { return string(rune('0' + n)) }

// startOn starts ripcord on dbURL with config in the repository, where bob
// has bobPermission and visitor may read; every request to GitHub must be
// one GitHub would take.
func startOn(t *testing.T, dbURL, config, bobPermission string) *e2etest.Env {
	t.Helper()
	e := e2etest.Start(t, dbURL, app.Options{})
	e.CheckRequestsAtCleanup(t)
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", config)
	e.GitHub.SetPermission(repo, "bob", bobPermission)
	e.GitHub.SetPermission(repo, "visitor", "read")
	e.Install(repo)
	return e
}

// openRollout opens a release of checkout to prod through the API and
// returns its rollout's id.
func openRollout(e *e2etest.Env, releaseID, image string) string {
	e.T.Helper()
	code, body := e.Do("POST", "/api/v1/releases", "application/json", []byte(`{"release_id": "`+releaseID+`",
		"app": "checkout", "environment": "prod", "cluster": "prod-eu", "repository": "acme/checkout", "image": "`+image+`",
		"git_revision": "`+headSHA+`"}`))
	if code != http.StatusCreated {
		e.T.Fatalf("POST release %s answered %d: %s", releaseID, code, body)
	}
	var id string
	e.WaitFor("the rollout of "+releaseID, wait, func() bool {
		_, b := e.Do("GET", "/api/v1/rollouts?release_id="+url.QueryEscape(releaseID), "", nil)
		var out struct{ Rollouts []rolloutflow.StatusJSON }
		_ = json.Unmarshal(b, &out)
		if len(out.Rollouts) == 1 {
			id = out.Rollouts[0].ID
		}
		return id != ""
	})
	return id
}

// A release opened through the API rolls out: the canary's batch is
// dispatched, the workflow_run event moves it on, the check run asks for
// approval with a button, a reader's click is refused, a writer's goes on.
func TestReleaseOpenedThroughTheAPIRollsOutWithAnApprovalButton(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, approvalButton)
}

func approvalButton(t *testing.T, dbURL string) {
	s := atFirstApproval(t, dbURL, e2eConfig, "write")
	e := s.Env
	if st := s.status(); st.Rollout.Status != rolloutflow.PausedApproval || st.State != "AWAITING_APPROVAL" {
		t.Fatalf("status %s (%s), want paused-approval", st.Rollout.Status, st.State)
	}

	s.click("visitor")
	s.settle()
	if st := s.status(); st.Rollout.Status != rolloutflow.PausedApproval || len(e.GitHub.Dispatches(repo)) != 1 {
		t.Fatalf("a reader's click moved the rollout: %s, %d dispatches", st.Rollout.Status, len(e.GitHub.Dispatches(repo)))
	}
	s.click("bob")
	s.finish(2)
	e.WaitFor("the rollout to succeed", wait, func() bool { return s.status().Rollout.Status == rolloutflow.Succeeded })
	e.WaitFor("the check run to say success", wait, func() bool {
		cr, ok := s.check()
		return ok && cr.Conclusion == "success"
	})
	cr, _ := s.check()
	if !strings.Contains(cr.Summary, "```mermaid") || !strings.Contains(cr.Summary, "| 2 | `rest` | rest | ✅ succeeded |") {
		t.Errorf("check run summary has no table or diagram:\n%s", cr.Summary)
	}
	st := s.status()
	var audit []string
	for _, l := range st.Audit {
		audit = append(audit, l.Message)
	}
	if all := strings.Join(audit, "\n"); !strings.Contains(all, "refused") || !strings.Contains(all, "@bob approved wave canary") {
		t.Errorf("audit does not show the refused click and the approval:\n%s", all)
	}
	resp, err := http.Get(e.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	metrics, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(metrics), `ripcord_rollout_passes_total{application="checkout",az="eu-1b",environment="prod",outcome="succeeded",region="eu-1"} 1`) {
		t.Errorf("/metrics has no pass of eu-1b")
	}
}

// The bundled action's task fact that opens a release starts its rollout,
// like POST /api/v1/releases does.
func TestReleaseOpenedByTheBundledActionRollsOut(t *testing.T) {
	t.Parallel()
	e := e2etest.Start(t, testdb.MigratedURL(t, "sqlite"), app.Options{})
	e.CheckRequestsAtCleanup(t)
	e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", e2eConfig)
	e.Install(repo)
	e.Fact(map[string]any{"source": "task", "repository": repo, "workflow_run_id": 4242, "run_attempt": 1,
		"status": "in_progress", "app": "checkout", "environment": "prod", "cluster": "prod-eu",
		"release_id": "r7:prod-eu/prod", "observed_at": time.Now().UTC().Format(time.RFC3339Nano),
		"images":   []string{"ghcr.io/acme/checkout:v7@sha256:" + strings.Repeat("7", 64)},
		"metadata": map[string]string{"commit": headSHA}})
	var id string
	e.WaitFor("the rollout of r7", wait, func() bool {
		_, b := e.Do("GET", "/api/v1/rollouts?release_id="+url.QueryEscape("r7:prod-eu/prod"), "", nil)
		var out struct{ Rollouts []rolloutflow.StatusJSON }
		_ = json.Unmarshal(b, &out)
		if len(out.Rollouts) == 1 {
			id = out.Rollouts[0].ID
		}
		return id != ""
	})
	e.WaitFor("the canary's batch", wait, func() bool { return len(e.GitHub.Dispatches(repo)) == 1 })
	if d := e.GitHub.Dispatches(repo)[0]; d.Inputs["release_id"] != "r7:prod-eu/prod" {
		t.Errorf("dispatch inputs %v, want release r7", d.Inputs)
	}
	// The same fact again (a retried step) opens nothing and starts nothing.
	e.Fact(map[string]any{"source": "task", "repository": repo, "workflow_run_id": 4242, "run_attempt": 1,
		"status": "in_progress", "app": "checkout", "environment": "prod", "cluster": "prod-eu",
		"release_id": "r7:prod-eu/prod", "observed_at": time.Now().UTC().Format(time.RFC3339Nano),
		"images":   []string{"ghcr.io/acme/checkout:v7@sha256:" + strings.Repeat("7", 64)},
		"metadata": map[string]string{"commit": headSHA}})
	time.Sleep(500 * time.Millisecond)
	if n := e.Int(`SELECT COUNT(*) FROM rollouts`); n != 1 {
		t.Errorf("%d rollouts after a repeated fact, want 1", n)
	}
}

// atFirstApproval opens release r1's rollout on a server whose GitHub gives
// bob perm, finishes its first batch and returns once the check run shows
// the Approve button.
func atFirstApproval(t *testing.T, dbURL, config, perm string) *scene {
	t.Helper()
	e := startOn(t, dbURL, config, perm)
	s := &scene{Env: e, id: openRollout(e, "r1:prod-eu/prod", "v1")}
	s.finish(1)
	e.WaitFor("the approval button", wait, s.approveShown)
	return s
}

// approveShown reports whether the check run asks for approval with its
// one button.
func (s *scene) approveShown() bool {
	cr, ok := s.check()
	return ok && cr.Conclusion == "action_required" && len(cr.Actions) == 1
}
