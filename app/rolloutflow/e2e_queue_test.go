package rolloutflow_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/internal/testdb"
)

// A second release of the same app and environment does not roll out beside
// the first: it waits, queued, with a queued check run, and deploys nothing
// until the first has ended; the end of the first starts it at once (the
// queued rollout's own look every five minutes is longer than this test waits). A
// third, aborted while queued, ends without deploying anything.
func TestARolloutWaitsForTheOlderRolloutOfItsEnvironment(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, rolloutQueue)
}

func rolloutQueue(t *testing.T, dbURL string) {
	e, first, second := queuedBehindApproval(t, dbURL)
	st := second.status()
	if !strings.Contains(st.Rollout.Paused, first.id) || st.State != "RUNNING" || st.RolloutProgress != "0/2" {
		t.Errorf("queued rollout: paused %q, state %s, progress %s; want it behind %s, RUNNING, 0/2",
			st.Rollout.Paused, st.State, st.RolloutProgress, first.id)
	}
	e.WaitFor("r2's check run to say queued", wait, func() bool {
		cr, ok := second.check()
		return ok && cr.Status == "queued" && strings.Contains(cr.Title, first.id)
	})

	// The answer of POST /api/v1/rollouts already says the rollout waits.
	code, body := e.Do("POST", "/api/v1/rollouts", "application/json", []byte(`{"app": "checkout", "environment": "prod", "version": "v3"}`))
	var created rolloutflow.StatusJSON
	if err := json.Unmarshal(body, &created); err != nil || code != http.StatusCreated {
		t.Fatalf("POST /api/v1/rollouts answered %d: %s", code, body)
	}
	if created.Rollout.Status != rolloutflow.PausedQueue || !strings.Contains(created.Rollout.Paused, first.id) {
		t.Errorf("POST /api/v1/rollouts answered status %s, paused %q; want paused-queue behind %s", created.Rollout.Status, created.Rollout.Paused, first.id)
	}
	third := &scene{Env: e, id: created.ID}

	// /metrics counts the rollouts not ended by status.
	resp, err := http.Get(e.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`ripcord_rollouts_unfinished{app="checkout",environment="prod",status="paused-queue"} 2`,
		`ripcord_rollouts_unfinished{app="checkout",environment="prod",status="paused-approval"} 1`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// The environment's queue, newest first.
	code, body = e.Do("GET", "/api/v1/rollouts?app=checkout&environment=prod&unfinished=true", "", nil)
	var listed struct{ Rollouts []rolloutflow.StatusJSON }
	if err := json.Unmarshal(body, &listed); err != nil || code != http.StatusOK {
		t.Fatalf("GET /api/v1/rollouts?app=&environment= answered %d: %s", code, body)
	}
	var order []string
	for _, r := range listed.Rollouts {
		order = append(order, r.ID+" "+string(r.Rollout.Status))
	}
	want := []string{third.id + " paused-queue", second.id + " paused-queue", first.id + " paused-approval"}
	if strings.Join(order, ", ") != strings.Join(want, ", ") {
		t.Errorf("unfinished rollouts of checkout/prod:\n  %s\nwant\n  %s", strings.Join(order, ", "), strings.Join(want, ", "))
	}
	for query, field := range map[string]string{"app=checkout": "environment", "environment=prod": "app",
		"app=checkout&environment=prod&limit=0": "limit", "app=checkout&environment=prod&unfinished=maybe": "unfinished",
		// An unknown parameter would list the whole queue as if filtered.
		"app=checkout&environment=prod&state=paused": "state", "release_id=" + url.QueryEscape(third.id) + "&env=prod": "env"} {
		code, body := e.Do("GET", "/api/v1/rollouts?"+query, "", nil)
		var refusal struct{ Field string }
		_ = json.Unmarshal(body, &refusal)
		if code != http.StatusBadRequest || refusal.Field != field {
			t.Errorf("GET /api/v1/rollouts?%s answered %d %s, want 400 naming %s", query, code, body, field)
		}
	}
	if code, body := e.Do("GET", "/api/v1/rollouts?app=checkout&environment=prod&unfinshed=true", "", nil); code != http.StatusBadRequest ||
		!strings.Contains(string(body), "unfinshed: unknown parameter; this endpoint takes release_id, app, environment, unfinished, limit; did you mean unfinished?") {
		t.Errorf("GET /api/v1/rollouts?…&unfinshed=true answered %d %s, want 400 suggesting unfinished", code, body)
	}
	code, body = e.Do("POST", "/api/v1/rollouts/"+url.PathEscape(third.id)+"/abort", "application/json",
		[]byte(`{"user": "bob", "reason": "r2 carries the fix"}`))
	if code != http.StatusOK || !strings.Contains(string(body), "before it started: nothing was deployed") {
		t.Fatalf("abort of the queued r3 answered %d: %s", code, body)
	}
	e.WaitFor("r3 to end", wait, func() bool { return third.status().Rollout.Status == rolloutflow.Failed })
	if st := third.status(); st.Rollout.Rollback != nil || !strings.Contains(auditOf(st), "before it started: r2 carries the fix") {
		t.Errorf("aborted queued rollout: rollback %+v, audit:\n%s", st.Rollout.Rollback, auditOf(st))
	}
	if n := len(e.GitHub.Dispatches(repo)); n != 1 {
		t.Fatalf("%d dispatches while r1 waits for approval, want r1's canary only", n)
	}

	first.click("bob")
	first.finish(2)
	e.WaitFor("r1 to succeed", wait, func() bool { return first.status().Rollout.Status == rolloutflow.Succeeded })
	e.WaitFor("r2's canary", wait, func() bool { return len(e.GitHub.Dispatches(repo)) == 3 })
	if d := e.GitHub.Dispatches(repo)[2]; d.Inputs["release_id"] != "r2:prod-eu/prod" {
		t.Errorf("third dispatch inputs %v, want r2's canary", d.Inputs)
	}
	st = second.status()
	if st.Rollout.Status != rolloutflow.Running || st.Rollout.Paused != "" {
		t.Errorf("r2 after r1 ended: %s, paused %q; want running", st.Rollout.Status, st.Rollout.Paused)
	}
	if a := auditOf(st); strings.Count(a, "waits for rollout "+first.id) != 1 || !strings.Contains(a, first.id+" of release r1:prod-eu/prod has ended") {
		t.Errorf("r2's audit does not say, once, what it waited for, and when that ended:\n%s", a)
	}
}

// queuedBehindApproval starts ripcord on dbURL with r1's rollout waiting
// for approval after its canary and r2's queued behind it.
func queuedBehindApproval(t *testing.T, dbURL string) (e *e2etest.Env, first, second *scene) {
	t.Helper()
	e = startOn(t, dbURL, e2eConfig, "write")
	first = &scene{Env: e, id: openRollout(e, "r1:prod-eu/prod", "v1")}
	first.finish(1)
	e.WaitFor("r1 to wait for approval", wait, func() bool { return first.status().Rollout.Status == rolloutflow.PausedApproval })
	second = &scene{Env: e, id: openRollout(e, "r2:prod-eu/prod", "v2")}
	e.WaitFor("r2 to queue", wait, func() bool { return second.status().Rollout.Status == rolloutflow.PausedQueue })
	return e, first, second
}

func auditOf(st rolloutflow.StatusJSON) string {
	var lines []string
	for _, l := range st.Audit {
		lines = append(lines, l.Message)
	}
	return strings.Join(lines, "\n")
}

// A rollback of a release stops that release's rollout: its later waves
// would deploy it again. The rollout queued behind it was merged on top of
// the release rolled back, so it does not start on its own: it is held,
// with an Approve button, until a person other than its author lifts the
// hold; a rejection is refused (abort ends a rollout).
func TestARollbackStopsTheRolloutOfTheReleaseItTakesBack(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, rollbackStopsAndHolds)
}

func rollbackStopsAndHolds(t *testing.T, dbURL string) {
	e, first, second := queuedBehindApproval(t, dbURL)

	code, body := e.Do("POST", "/api/v1/releases", "application/json", []byte(`{"release_id": "rb1:prod-eu/prod",
		"app": "checkout", "environment": "prod", "cluster": "prod-eu", "repository": "acme/checkout", "image": "v0",
		"kind": "rollback", "rollback_of": "r1:prod-eu/prod", "rollback_reason": "error rate"}`))
	if code != http.StatusCreated {
		t.Fatalf("POST rollback release answered %d: %s", code, body)
	}
	e.WaitFor("r1's rollout to stop", wait, func() bool { return first.status().Rollout.Status == rolloutflow.Failed })
	st := first.status()
	if !strings.Contains(auditOf(st), "the rollout stops: release r1:prod-eu/prod is rolled back by rb1:prod-eu/prod (error rate)") {
		t.Errorf("r1's rollout after the rollback does not say why it stopped:\n%s", auditOf(st))
	}
	if n := e.Int(`SELECT COUNT(*) FROM rollouts WHERE release_id = 'rb1:prod-eu/prod'`); n != 0 {
		t.Errorf("the rollback release has %d rollouts, want none: it goes back everywhere at once", n)
	}

	e.WaitFor("r2 to be held", wait, func() bool { return second.status().Rollout.Status == rolloutflow.PausedHold })
	e.WaitFor("r2's check run to ask for an approval", wait, func() bool {
		cr, ok := second.check()
		return ok && cr.Conclusion == "action_required" && strings.Contains(cr.Title, "paused-hold") && strings.Contains(cr.Title, first.id)
	})
	st = second.status()
	if st.State != "AWAITING_APPROVAL" || !strings.Contains(st.Rollout.Paused, "rollout "+first.id+" of release r1:prod-eu/prod") {
		t.Errorf("held r2: state %s, paused %q; want AWAITING_APPROVAL and why", st.State, st.Rollout.Paused)
	}
	second.settle()
	if n := len(e.GitHub.Dispatches(repo)); n != 1 {
		t.Fatalf("%d dispatches with r2 held, want r1's canary only", n)
	}

	for _, vote := range []struct{ body, want string }{
		{`{"user": "bob", "reject": true}`, "approve starts it, abort ends it"},
		{`{"user": "", "reject": false}`, "user: required"},
	} {
		code, body := e.Do("POST", "/api/v1/rollouts/"+url.PathEscape(second.id)+"/approve", "application/json", []byte(vote.body))
		if code != http.StatusConflict && code != http.StatusBadRequest || !strings.Contains(string(body), vote.want) {
			t.Errorf("vote %s on the held r2 answered %d: %s; want a refusal saying %q", vote.body, code, body, vote.want)
		}
	}
	second.click("bob")
	e.WaitFor("r2's canary", wait, func() bool { return len(e.GitHub.Dispatches(repo)) == 2 })
	if d := e.GitHub.Dispatches(repo)[1]; d.Inputs["release_id"] != "r2:prod-eu/prod" {
		t.Errorf("second dispatch inputs %v, want r2's canary, not r1's next wave", d.Inputs)
	}
	if a := auditOf(second.status()); !strings.Contains(a, "held: rollout "+first.id) || !strings.Contains(a, "@bob lifted the hold") {
		t.Errorf("r2's audit does not say it was held and who lifted it:\n%s", a)
	}
}
