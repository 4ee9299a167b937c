package webui_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/app/webui"
)

// staging rolls checkout out in two waves, with an approval after the
// canary.
const rolloutConfig = repoConfig + `      staging:
        cluster: stage-eu
        targets:
          - {host: eu1-a-01, labels: {region: eu-1, az: eu-1a, canary: "true"}}
          - {host: eu1-b-01, labels: {region: eu-1, az: eu-1b}}
          - {host: eu1-b-02, labels: {region: eu-1, az: eu-1b}}
        rollout:
          waves:
            - {name: canary, select: "canary=true"}
            - {name: rest, select: "canary!=true"}
          approvals_between: [canary]
`

const staged = "r9:stage-eu/staging"

// rolledOut opens a staging release through the API, so the wave executor
// starts its rollout, and lets the canary's run succeed: the rollout then
// waits for approval with the canary done and the rest pending. It returns
// the rollout's id.
func (s *site) rolledOut(t *testing.T) string {
	t.Helper()
	headSHA := strings.Repeat("9", 40)
	s.GitHub.PutFile(appRepo, "main", ".github/ripcord.yml", rolloutConfig)
	code, b := s.Do("POST", "/api/v1/releases", "application/json", []byte(`{"release_id": "`+staged+`",
		"app": "checkout", "environment": "staging", "cluster": "stage-eu", "repository": "`+appRepo+`",
		"image": "ghcr.io/acme/checkout:v9", "git_revision": "`+headSHA+`"}`))
	if code != http.StatusCreated {
		t.Fatalf("POST release answered %d: %s", code, b)
	}
	var id string
	s.WaitFor("the rollout of "+staged, wait, func() bool {
		_, b := s.Do("GET", "/api/v1/rollouts?release_id="+url.QueryEscape(staged), "", nil)
		var out struct{ Rollouts []rolloutflow.StatusJSON }
		_ = json.Unmarshal(b, &out)
		if len(out.Rollouts) == 1 {
			id = out.Rollouts[0].ID
		}
		return id != ""
	})
	s.WaitFor("the canary's dispatch", wait, func() bool { return len(s.GitHub.Dispatches(appRepo)) >= 1 })
	d := s.GitHub.Dispatches(appRepo)[0]
	s.Deliver("workflow_run", s.WorkflowRun(e2etest.Run{Repository: appRepo, ID: d.RunID, Attempt: 1, Conclusion: "success", HeadSHA: headSHA}))
	s.WaitFor("the rollout to wait for approval", wait, func() bool {
		_, b := s.Do("GET", "/api/v1/rollouts/"+url.PathEscape(id), "", nil)
		var st rolloutflow.StatusJSON
		return json.Unmarshal(b, &st) == nil && st.Rollout.Status == rolloutflow.PausedApproval
	})
	return id
}

// The release page of a release the wave executor rolled out shows its
// rollout from the executor's own tables: the status, each stage coloured
// by its state, and the link to the status JSON.
func TestReleasePageShowsTheExecutorsRollout(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	id := s.rolledOut(t)
	p := s.do(t, "GET", releasePath(staged), nil, s.signIn(t, "alice"))
	if p.status != http.StatusOK {
		t.Fatalf("GET %s = %d", releasePath(staged), p.status)
	}
	for _, want := range []string{
		`<span class="state running">paused-approval</span> stage <strong>canary</strong> · 1/2 stages passed`,
		`<tr class="stage ok" data-stage="canary" data-state="succeeded">`,
		`<tr class="stage done" data-stage="rest" data-state="pending">`,
		`approval pending`,
		`canary (1 host, 1/1 batches)`,
		`rest (2 hosts, 0/2 batches)`,
		`Paused: approval of wave canary`,
		`href="/api/v1/rollouts/` + url.PathEscape(id) + `"`,
	} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the release page has no %q:\n%s", want, p.body)
		}
	}
	if strings.Contains(p.body, "no rollout") {
		t.Error("a rolled-out release says no rollout")
	}
	if other := s.do(t, "GET", releasePath(r2), nil, s.signIn(t, "alice")); !strings.Contains(other.body, `id="no-rollout"`) {
		t.Errorf("%s, never rolled out in waves, shows a rollout", r2)
	}
	if code, b := s.Do("GET", "/api/v1/rollouts/"+url.PathEscape(id), "", nil); code != http.StatusOK {
		t.Errorf("the page's status link answers %d: %s", code, b)
	}
}

// The same page in headless Chromium: what a person sees of the rollout.
func TestBrowserRolloutStages(t *testing.T) {
	t.Parallel()
	browser := webui.NewBrowser(t)
	s := newSite(t)
	id := s.rolledOut(t)
	p := webui.Person(t, browser)
	webui.Step(t, p, "open "+staged, withSession(s.URL, s.signIn(t, "alice")), chromedp.Navigate(s.URL+releasePath(staged)),
		chromedp.WaitVisible(chromedp.CSS("table.stages")))
	rows := webui.EvalString(t, p, `Array.from(document.querySelectorAll('tr.stage')).map(r => r.dataset.stage + '=' + r.dataset.state + '/' + r.className).join(' ')`)
	if want := "canary=succeeded/stage ok rest=pending/stage done"; rows != want {
		t.Errorf("stage rows %q, want %q", rows, want)
	}
	// Coloured by state: the succeeded canary's marker is green, not the
	// pending stage's grey.
	colours := strings.Fields(webui.EvalString(t, p, `Array.from(document.querySelectorAll('tr.stage td:first-child')).map(td => getComputedStyle(td).borderLeftColor.replace(/ /g, '')).join(' ')`))
	if len(colours) != 2 || colours[0] != "rgb(26,127,55)" || colours[0] == colours[1] {
		t.Errorf("stage markers %v, want the canary green (rgb(26,127,55)) and the rest another colour", colours)
	}
	status := webui.EvalString(t, p, `document.querySelector('#rollout-status').innerText`)
	if !strings.Contains(status, "paused-approval") || !strings.Contains(status, "1/2 stages passed") {
		t.Errorf("rollout status line = %q", status)
	}
	href := webui.EvalString(t, p, `document.querySelector('#rollout-api').getAttribute('href')`)
	if want := "/api/v1/rollouts/" + url.PathEscape(id); href != want {
		t.Errorf("status link = %q, want %q", href, want)
	}
	cells := strings.Split(webui.EvalString(t, p, `Array.from(document.querySelectorAll('tr.stage td.gate')).map(td => td.innerText.trim()).join('|')`), "|")
	if !slices.Equal(cells, []string{"–", "–"}) {
		t.Errorf("gate cells %q, want both green (–)", cells)
	}
}
