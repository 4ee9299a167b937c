package webui

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/rollout/status"
)

type fakeRollouts struct {
	rollouts map[string]Rollout
	err      error
}

func (f fakeRollouts) Rollout(_ context.Context, id string) (Rollout, bool, error) {
	r, ok := f.rollouts[id]
	return r, ok, f.err
}

func TestReleasePageShowsRolloutStages(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testdb.URL(t, "sqlite"))
	f.seedShop(t)
	app := appWith("https://github.example/")
	started := t0.Add(2 * time.Hour)
	rollouts := fakeRollouts{rollouts: map[string]Rollout{"shop-3": {ID: "ro/1", Status: "failed", Progress: "1/3",
		Stage: "eu-west-1", OnFailure: "rollback", Rollback: "rollback succeeded: canary", Drift: []string{"canary", "eu-west-1 (partly)"}, Stages: []Stage{
			{Name: "canary", Wave: "canary", State: "succeeded", StartedAt: &started, Passes: "eu-1a (1 host, 1/1 batches)"},
			{Name: "eu-west-1", Wave: "regions", State: "failed", Gate: "gate error-rate: 7% > 2%"},
			{Name: "us-east-1", Wave: "regions", State: "pending", Approval: "pending"},
		}}}}
	d := pipeline.Deps{Config: newTestConfig(), Records: f.st, App: func() pipeline.AppIdentity { return app },
		Now: func() time.Time { return now }}
	mux := http.NewServeMux()
	newHandler(d, newFakeGitHub(), rollouts).routes(mux)
	alice := sessionCookieFor(t, app, "alice", "tok-alice")

	b := body(get(t, mux, "/releases/shop-3", alice))
	canary, eu, us := strings.Index(b, `data-stage="canary"`), strings.Index(b, `data-stage="eu-west-1"`), strings.Index(b, `data-stage="us-east-1"`)
	if canary < 0 || !(canary < eu && eu < us) {
		t.Errorf("stage rows missing or out of order (%d %d %d):\n%s", canary, eu, us, b)
	}
	for _, want := range []string{
		`<tr class="stage ok" data-stage="canary" data-state="succeeded">`,
		`<tr class="stage bad" data-stage="eu-west-1" data-state="failed">`,
		`<tr class="stage done" data-stage="us-east-1" data-state="pending">`,
		`gate error-rate: 7% &gt; 2%`,
		`<span class="state bad">failed</span> stage <strong>eu-west-1</strong> · 1/3 stages passed · on_failure: rollback`,
		`href="/api/v1/rollouts/ro%2F1"`,
		`rollback succeeded: canary`,
		`<p id="rollout-drift" class="warn">Drift: the new version runs on <strong>canary</strong>, <strong>eu-west-1 (partly)</strong>;`,
		`approval pending`,
		`eu-1a (1 host, 1/1 batches)`,
		`<time datetime="2026-11-02T11:00:00Z">`,
	} {
		if !strings.Contains(b, want) {
			t.Errorf("the release page has no %q:\n%s", want, b)
		}
	}
	if strings.Contains(b, "no rollout") {
		t.Error("a release with stages says no rollout")
	}
	if b := body(get(t, mux, "/releases/shop-2", alice)); !strings.Contains(b, "no rollout") || strings.Contains(b, "table class=\"stages\"") {
		t.Error("a release without a rollout does not say so")
	}

	broken := http.NewServeMux()
	newHandler(d, newFakeGitHub(), fakeRollouts{err: errors.New("db down")}).routes(broken)
	if w := get(t, broken, "/releases/shop-3", alice); w.Code != http.StatusInternalServerError || strings.Contains(body(w), "db down") {
		t.Errorf("a failing rollout source = %d; want 500 without the internal error", w.Code)
	}
}

// fromWaves turns the executor's view into the page's: times it has not
// reached stay empty, passes and the rollback read as one line each.
func TestFromWavesKeepsWhatThePageShows(t *testing.T) {
	t.Parallel()
	started := t0.Add(time.Minute)
	v := rolloutflow.RolloutView{ID: "ro1", Status: status.Failed, Progress: "1/2", Stage: "rest", OnFailure: "rollback",
		Rollback: &status.Rollback{Status: "failed", Stages: []string{"rest", "canary"}, Reason: "run 9 failed"},
		Stages: []rolloutflow.StageView{
			{Name: "canary", Wave: "canary", State: status.StageRolledBack, StartedAt: started, FinishedAt: started.Add(time.Minute),
				Passes: []rolloutflow.PassView{{Name: "eu-1a", Hosts: 1, Batches: 1, BatchesSucceeded: 1}}},
			{Name: "rest", Wave: "rest", State: status.StageFailed, Gate: "probe http: 503",
				Passes: []rolloutflow.PassView{{Name: "eu-1b", Hosts: 3, Batches: 2}, {Name: "eu-1c", Hosts: 2, Batches: 1}}},
		}}
	v.Drift = []string{"canary"}
	got := fromWaves(v)
	if len(got.Drift) != 1 || got.Drift[0] != "canary" {
		t.Errorf("drift = %q, want the executor's", got.Drift)
	}
	if got.ID != "ro1" || got.Status != "failed" || got.Stage != "rest" || got.Progress != "1/2" || got.OnFailure != "rollback" {
		t.Errorf("rollout = %+v", got)
	}
	if want := "rollback failed: rest, canary — run 9 failed"; got.Rollback != want {
		t.Errorf("rollback = %q, want %q", got.Rollback, want)
	}
	if len(got.Stages) != 2 {
		t.Fatalf("stages = %+v", got.Stages)
	}
	canary, rest := got.Stages[0], got.Stages[1]
	if canary.StartedAt == nil || !canary.StartedAt.Equal(started) || canary.FinishedAt == nil || canary.State != "rolled-back" {
		t.Errorf("canary = %+v", canary)
	}
	if rest.StartedAt != nil || rest.FinishedAt != nil {
		t.Errorf("a stage never dispatched shows times: %+v", rest)
	}
	if want := "eu-1b (3 hosts, 0/2 batches), eu-1c (2 hosts, 0/1 batches)"; rest.Passes != want || rest.Gate != "probe http: 503" {
		t.Errorf("rest passes %q gate %q, want %q", rest.Passes, rest.Gate, want)
	}
	if !got.Deployed {
		t.Errorf("a rollout whose canary batch succeeded is not marked deployed")
	}
	v.Stages[0].Passes[0].BatchesSucceeded = 0
	if fromWaves(v).Deployed {
		t.Errorf("a rollout with no batch succeeded is marked deployed")
	}
}

// deployedRollouts is fakeRollouts that also says which releases a
// rollout of theirs deployed (DeployedLister).
type deployedRollouts struct {
	fakeRollouts
	deployed map[string]string
}

func (f deployedRollouts) Deployed(_ context.Context, ids []string) (map[string]string, error) {
	out := map[string]string{}
	for _, id := range ids {
		if st, ok := f.deployed[id]; ok {
			out[id] = st
		}
	}
	return out, f.err
}

// A release whose rollout deployed it and then failed, with a deploy
// workflow that sends no facts, stays opened in its record. The releases
// page must not call it pending (a pull request not merged, never run): it
// says the rollout deployed it and that no fact came, so it is not
// counted. A rollout that succeeded reports its release healthy: while its
// record is still opened (the report not applied yet) the page says it
// rolled out, not that no fact will come. An opened release no rollout
// deployed is still pending.
func TestReleasesPageSaysAnOpenedReleaseWasRolledOut(t *testing.T) {
	t.Parallel()
	d, app := openedAfterShop(t)
	mux := http.NewServeMux()
	newHandler(d, newFakeGitHub(), deployedRollouts{deployed: map[string]string{"shop-4": "failed", "shop-6": "succeeded"}}).routes(mux)
	alice := sessionCookieFor(t, app, "alice", "tok-alice")

	b := body(get(t, mux, "/", alice))
	rowOf := func(id string) string {
		i := strings.Index(b, `data-release-id="`+id+`"`)
		if i < 0 {
			t.Fatalf("no row for %s:\n%s", id, b)
		}
		end := strings.Index(b[i:], "</tr>")
		return b[i : i+end]
	}
	four := rowOf("shop-4")
	if !strings.Contains(four, "rolled out (failed), no fact") || !strings.Contains(four, "not counted: no fact") ||
		strings.Contains(four, ">pending<") || strings.Contains(four, "pull request is not merged") {
		t.Errorf("the row of shop-4, deployed by its rollout, does not say so:\n%s", four)
	}
	six := rowOf("shop-6")
	if !strings.Contains(six, "rolled out (succeeded)") || strings.Contains(six, "no fact") ||
		strings.Contains(six, ">pending<") || strings.Contains(six, "pull request is not merged") {
		t.Errorf("the row of shop-6, whose rollout succeeded, says no fact came or that it is pending:\n%s", six)
	}
	if five := rowOf("shop-5"); !strings.Contains(five, ">pending<") || strings.Contains(five, "rolled out") {
		t.Errorf("the row of shop-5, deployed by nothing, is not pending:\n%s", five)
	}

	broken := http.NewServeMux()
	newHandler(d, newFakeGitHub(), deployedRollouts{fakeRollouts: fakeRollouts{err: errors.New("db down")}}).routes(broken)
	if w := get(t, broken, "/", alice); w.Code != http.StatusInternalServerError || strings.Contains(body(w), "db down") {
		t.Errorf("a failing rollout source = %d; want 500 without the internal error", w.Code)
	}
}

// openedAfterShop seeds the shop releases and opens shop-4, shop-5 and
// shop-6 after them, with no fact, for the pages' "rolled out" tests.
func openedAfterShop(t *testing.T) (pipeline.Deps, pipeline.AppIdentity) {
	t.Helper()
	f := newFixture(t, testdb.URL(t, "sqlite"))
	f.seedShop(t)
	for _, id := range []string{"shop-4", "shop-5", "shop-6"} {
		f.open(t, records.Record{ReleaseID: id, App: "shop", Environment: "production", Cluster: "eu-1", Repository: "acme/shop",
			Image: "ghcr.io/acme/shop:" + id, Kind: records.KindPromote, CreatedAt: t0.Add(3 * time.Hour)})
	}
	app := appWith("https://github.example/")
	d := pipeline.Deps{Config: newTestConfig(), Records: f.st, App: func() pipeline.AppIdentity { return app },
		Now: func() time.Time { return now }, Configs: pipeline.NewRepoConfigs()}
	return d, app
}

// The release page of an opened release its rollout deployed says so in
// its "Rollback target" line, as the list does, instead of calling it a
// pull request that never ran beside the rollout's own succeeded stages;
// "no fact about it came" only when the rollout did not succeed (one that
// succeeded reports the release healthy).
func TestReleasePageSaysAnOpenedReleaseWasRolledOut(t *testing.T) {
	t.Parallel()
	d, app := openedAfterShop(t)
	mux := http.NewServeMux()
	newHandler(d, newFakeGitHub(), fakeRollouts{rollouts: map[string]Rollout{
		"shop-4": {ID: "ro-4", Status: "failed", Progress: "1/2", Deployed: true,
			Stages: []Stage{{Name: "canary", Wave: "canary", State: "succeeded"}, {Name: "rest", Wave: "rest", State: "failed"}}},
		"shop-6": {ID: "ro-6", Status: "succeeded", Progress: "1/1", Deployed: true,
			Stages: []Stage{{Name: "all", Wave: "all", State: "succeeded"}}},
		"shop-5": {ID: "ro-5", Status: "paused-queue", Progress: "0/1",
			Stages: []Stage{{Name: "all", Wave: "all", State: "pending"}}},
	}}).routes(mux)
	alice := sessionCookieFor(t, app, "alice", "tok-alice")

	eligibility := func(id string) string {
		b := body(get(t, mux, "/releases/"+id, alice))
		i := strings.Index(b, `<dd id="eligibility">`)
		if i < 0 {
			t.Fatalf("no eligibility line on the page of %s:\n%s", id, b)
		}
		return b[i : i+strings.Index(b[i:], "</dd>")]
	}
	if got := eligibility("shop-4"); !strings.Contains(got, "its rollout deployed it to hosts (rollout failed), but no fact about it came") ||
		strings.Contains(got, "pull request is not merged") {
		t.Errorf("shop-4, deployed by its rollout: %s", got)
	}
	if got := eligibility("shop-6"); !strings.Contains(got, "its rollout succeeded") || strings.Contains(got, "no fact") ||
		strings.Contains(got, "pull request is not merged") {
		t.Errorf("shop-6, whose rollout succeeded: %s", got)
	}
	if got := eligibility("shop-5"); !strings.Contains(got, "pull request is not merged") {
		t.Errorf("shop-5, whose rollout deployed nothing: %s", got)
	}
}
