package deployments

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// A release that starts, turns healthy and is superseded by the next one
// shows on GitHub as one deployment with in_progress, success, inactive —
// and opened → progressing, both in_progress, writes once.
func TestReleaseLifecycleWritesOneStatusPerChange(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		e.install(repository)
		a, b := newRelease("rel-a:prod-eu/production"), newRelease("rel-b:prod-eu/production")
		e.open(a)
		e.settle()
		e.observe(a, records.PhaseProgressing, 1)
		e.settle()
		e.observe(a, records.PhaseHealthy, 4)
		e.settle()
		e.open(b)
		e.observe(b, records.PhaseHealthy, 4)
		e.settle()

		if got := e.statuses(a.ReleaseID); got != "in_progress success inactive" {
			t.Errorf("statuses of the superseded release = %q, want %q", got, "in_progress success inactive")
		}
		if got := e.statuses(b.ReleaseID); got != "in_progress success" && got != "success" {
			t.Errorf("statuses of the new release = %q, want in_progress then success", got)
		}
		d := e.deploymentsOf(a.ReleaseID)[0]
		if d.Ref != a.GitRevision || d.Environment != "production" || !d.ProductionEnvironment || d.TransientEnvironment {
			t.Errorf("deployment = ref %s env %s production %v transient %v, want the release's revision to production",
				d.Ref, d.Environment, d.ProductionEnvironment, d.TransientEnvironment)
		}
		want := "https://ripcord.example/releases/rel-a:prod-eu%2Fproduction"
		for _, st := range d.Statuses {
			if st.LogURL != want || st.EnvironmentURL != want {
				t.Errorf("%s status links %s / %s, want the release's page %s", st.State, st.LogURL, st.EnvironmentURL, want)
			}
		}
		if n := e.gh.Count("POST", "/repos/{owner}/{repo}/deployments"); n != 2 {
			t.Errorf("deployments created = %d, want one per release", n)
		}
		if got := e.getInfo(a.ReleaseID); got.DeploymentID != d.ID || got.State != "inactive" || got.Skipped != "" {
			t.Errorf("GET deployment = %+v, want deployment %d inactive", got, d.ID)
		}
		// Sweeping a release takes its deployment row with it.
		if _, err := e.db.Write.Exec(`DELETE FROM records WHERE release_id = $1`, a.ReleaseID); err != nil {
			t.Fatalf("delete the record: %v", err)
		}
		if n := e.count(`SELECT COUNT(*) FROM deployments WHERE release_id = $1`, a.ReleaseID); n != 0 {
			t.Errorf("the deployment row outlived its record")
		}
	})
}

func TestFailedReleaseShowsFailure(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		e.install(repository)
		r := newRelease("rel-f:prod-eu/production")
		e.open(r)
		e.settle()
		e.observe(r, records.PhaseDegraded, 2)
		e.settle()
		if got := e.statuses(r.ReleaseID); got != "in_progress failure" {
			t.Errorf("statuses = %q, want %q", got, "in_progress failure")
		}
	})
}

// A fact sent twice changes no record and queues nothing; a job run again
// for the same record version (River's retry after a crash) finds the
// status written and writes nothing either.
func TestRedeliveredFactAndRepeatedJobWriteNothingMore(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		e.install(repository)
		r := newRelease("rel-r:prod-eu/production")
		e.open(r)
		e.observe(r, records.PhaseHealthy, 4)
		e.settle()
		before := e.writes()
		e.minute -= 2 // the same observation, sent again
		if n := e.observe(r, records.PhaseHealthy, 4); n != 0 {
			t.Fatalf("the redelivered fact changed %d records; the test needs a duplicate", n)
		}
		e.settle()
		rec, err := e.recs.Get(context.Background(), r.ReleaseID)
		if err != nil {
			t.Fatal(err)
		}
		job := &river.Job[SyncArgs]{JobRow: &rivertype.JobRow{ID: 987654, Attempt: 2},
			Args: SyncArgs{ReleaseID: r.ReleaseID, Version: rec.UpdatedAt.UnixMicro()}}
		again := e.deps
		again.Registerer = nil // the first worker registered the metrics
		if err := newWorker(again).Work(context.Background(), job); err != nil {
			t.Fatalf("repeated job: %v", err)
		}
		if got := e.writes(); got != before {
			t.Errorf("GitHub writes went from %d to %d on a redelivery; want none", before, got)
		}
		if got := e.statuses(r.ReleaseID); got != "in_progress success" && got != "success" {
			t.Errorf("statuses = %q, want in_progress then success", got)
		}
	})
}

// While GitHub is down the job fails and is retried; once it is back, the
// release has one deployment and one status. An answer lost after GitHub
// acted (a 502 on a write that arrived) is looked up, not repeated.
func TestGitHubDownIsRetriedLaterWithoutDuplicates(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		e.install(repository)
		r := newRelease("rel-d:prod-eu/production")
		e.net.set(true, 0)
		e.open(r)
		e.waitFor("the sync to fail and be retried", func() bool {
			return e.count(`SELECT COUNT(*) FROM river_job WHERE kind = 'deployment_sync' AND attempt >= 2`) > 0
		})
		if n := len(e.gh.Deployments(repository)); n != 0 {
			t.Fatalf("GitHub is down but has %d deployments", n)
		}
		e.net.set(false, 2) // back up, but the answers to the next two writes are lost
		e.settle()
		if got := e.statuses(r.ReleaseID); got != "in_progress" {
			t.Errorf("statuses = %q, want one in_progress", got)
		}
		e.observe(r, records.PhaseHealthy, 4)
		e.settle()
		if got := e.statuses(r.ReleaseID); got != "in_progress success" {
			t.Errorf("statuses = %q, want %q", got, "in_progress success")
		}
	})
}

// A release without a repository, or in a repository the App is not
// installed on, is skipped with its reason, without a call to GitHub.
func TestReleaseWithoutRepositoryOrInstallationIsSkippedWithItsReason(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		noRepo := newRelease("rel-n:prod-eu/production")
		noRepo.Repository = ""
		notInstalled := newRelease("rel-i:prod-eu/production")
		e.open(noRepo)
		e.open(notInstalled)
		e.settle()
		e.observe(notInstalled, records.PhaseProgressing, 1)
		e.settle()
		if n := len(e.gh.Requests()); n != 0 {
			t.Errorf("GitHub received %d requests for releases it cannot show", n)
		}
		for id, want := range map[string]string{
			noRepo.ReleaseID:       "the release names no repository",
			notInstalled.ReleaseID: "the ripcord App is not installed on acme/checkout",
		} {
			if got := e.getInfo(id); got.Skipped != want || got.DeploymentID != 0 {
				t.Errorf("deployment of %s = %+v, want skipped %q", id, got, want)
			}
		}
	})
}

// getInfo is GET /api/v1/releases/{id}/deployment.
func (e *env) getInfo(id string) Info {
	e.t.Helper()
	rec := httptest.NewRecorder()
	e.deps.Mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/releases/"+url.PathEscape(id)+"/deployment", nil))
	var got Info
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != http.StatusOK {
		e.t.Fatalf("GET deployment of %s = %d %s", id, rec.Code, rec.Body)
	}
	return got
}

// GitHub refusing a deployment (a 4xx: here a commit it does not know) is
// not retried for weeks: the job stops at once and the refusal is shown
// where the reason for a missing deployment is. A later change of the
// record asks again.
func TestRefusedDeploymentIsNotRetriedAndSaysWhy(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		e.install(repository)
		r := newRelease("rel-x:prod-eu/production")
		r.GitRevision = "abcdef123456" // a short sha GitHub cannot resolve
		e.open(r)
		e.waitFor("the sync to finish", func() bool {
			return e.count(`SELECT COUNT(*) FROM river_job WHERE kind = 'deployment_sync'
				AND state IN ('completed', 'cancelled', 'discarded')`) == 1
		})
		if n := e.count(`SELECT MAX(attempt) FROM river_job WHERE kind = 'deployment_sync'`); n != 1 {
			t.Errorf("the refused sync ran %d times, want once", n)
		}
		if n := e.gh.Count("POST", "/repos/{owner}/{repo}/deployments"); n != 1 {
			t.Errorf("GitHub was asked %d times for the deployment, want once", n)
		}
		got := e.getInfo(r.ReleaseID)
		if got.DeploymentID != 0 || !strings.Contains(got.Skipped, "GitHub refused") || !strings.Contains(got.Skipped, "No ref found") {
			t.Errorf("GET deployment = %+v, want no deployment and GitHub's refusal as the reason", got)
		}
	})
}

// A release withdrawn before it ran (its rollback pull request closed
// without merging: aborted with no fact, records.Withdraw) never deployed
// anything, so its deployment ends inactive, not failure: nothing failed.
// An abort the cluster reported is still a failure.
func TestWithdrawnReleaseEndsInactive(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		e.install(repository)
		w, a := newRelease("rel-w:prod-eu/production"), newRelease("rel-a:prod-eu/production")
		e.open(w)
		e.settle()
		err := e.db.InDurableTx(context.Background(), func(tx *sql.Tx) error {
			rec, ok, err := e.recs.WithdrawRelease(context.Background(), tx, w.ReleaseID,
				"pull request https://github.com/acme/gitops/pull/7 was closed without merging", nil, e.now())
			if err != nil || !ok {
				return fmt.Errorf("withdraw: ok %v, %v", ok, err)
			}
			return Queue(context.Background(), tx, e.rc, e.deps.Log, []records.Record{rec})
		})
		if err != nil {
			t.Fatal(err)
		}
		e.settle()
		if got := e.statuses(w.ReleaseID); got != "in_progress inactive" {
			t.Errorf("statuses of the withdrawn release = %q, want %q", got, "in_progress inactive")
		}
		e.open(a)
		e.observe(a, records.PhaseProgressing, 1)
		e.settle() // a sync reads the record as it is: let it see progressing first
		e.observe(a, records.PhaseDegraded, 2)
		e.settle()
		if got := e.statuses(a.ReleaseID); got != "in_progress failure" {
			t.Errorf("statuses of a release the cluster aborted = %q, want %q", got, "in_progress failure")
		}
	})
}

// GitHub down through the job's last attempt: the release's deployment is
// left behind its record, and GET /api/v1/releases/{id}/deployment says
// why instead of showing the old state as if it were current. The next
// change of the record writes the state and clears the reason.
func TestGitHubDownThroughTheLastAttemptSaysWhy(t *testing.T) {
	// Not parallel: its 25 attempts must end within the harness's 20 s
	// wait, which the CPU of the package's other tests stretched past.
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		e.install(repository)
		r := newRelease("rel-g:prod-eu/production")
		e.open(r)
		e.settle()
		e.net.set(true, 0)
		e.observe(r, records.PhaseHealthy, 4)
		e.waitFor("the sync to give up", func() bool {
			return e.count(`SELECT COUNT(*) FROM river_job WHERE kind = 'deployment_sync' AND state = 'discarded'`) == 1
		})
		e.net.set(false, 0)
		got := e.getInfo(r.ReleaseID)
		if got.State != "in_progress" || !strings.Contains(got.Skipped, "success") || !strings.Contains(got.Skipped, "503") {
			t.Errorf("GET deployment = %+v, want the old in_progress and why success is not shown", got)
		}
		if n := e.observe(r, records.PhaseDegraded, 4); n != 1 {
			t.Fatalf("the degraded fact changed %d records, want 1", n)
		}
		e.waitFor("the failure to be written", func() bool { return e.getInfo(r.ReleaseID).State == "failure" })
		if got := e.getInfo(r.ReleaseID); got.Skipped != "" {
			t.Errorf("GET deployment = %+v, want failure and no reason left", got)
		}
		if got := e.statuses(r.ReleaseID); got != "in_progress failure" {
			t.Errorf("statuses = %q, want %q", got, "in_progress failure")
		}
	})
}
