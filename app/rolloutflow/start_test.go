package rolloutflow

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/repoconfig"
	"github.com/ripcord/ripcord/rollout"
)

// parallelConfig is one batch of two hosts asking for both at once.
const parallelConfig = `version: 1
apps:
  checkout:
    environments:
      prod:
        cluster: prod-eu
        targets:
          - {host: eu1-a-01, labels: {region: eu-1, az: eu-1a}}
          - {host: eu1-a-02, labels: {region: eu-1, az: eu-1a}}
        rollout:
          max_unavailable: 100%%
          parallel: 2
          %s
          waves:
            - {name: all, select: "region=eu-1"}
`

// startRelease opens release id with gitRevision (empty, as `ripcord
// rollout start` opens one) and starts its rollout as the start job does.
func (h *harness) startRelease(id, gitRevision string) Rollout {
	h.t.Helper()
	rec := records.Record{ReleaseID: id, App: "checkout", Environment: "prod", Cluster: "prod-eu", Repository: testRepo,
		Image: "v3", Kind: records.KindPromote, GitRevision: gitRevision}
	ctx := context.Background()
	err := h.x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		_, _, err := h.x.deps.Records.OpenRelease(ctx, tx, rec, h.clock.Now())
		return err
	})
	if err != nil {
		h.t.Fatal(err)
	}
	r, err := h.x.start(ctx, configload.NewLoader(), StartArgs{ReleaseID: id})
	if err != nil {
		h.t.Fatal(err)
	}
	h.id = r.ID
	return r
}

func TestServerMaxParallelCapsTheBatchAndTheStatusShowsBoth(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "stop", "", time.Minute)
	h.gh.PutFile(testRepo, "main", ".github/ripcord.yml", fmt.Sprintf(parallelConfig, ""))
	h.x.server = Server{MaxParallel: 1}
	h.startRelease("r3:prod-eu/prod", strings.Repeat("b", 40))
	h.tick()
	if d := h.gh.Dispatches(testRepo); len(d) != 1 || d[0].Inputs["parallel"] != "1" {
		t.Fatalf("dispatches %+v, want one with parallel 1", d)
	}
	st, err := h.x.Status(context.Background(), h.id)
	if err != nil {
		t.Fatal(err)
	}
	if b := st.Rollout.Stages[0].Passes[0].Batches[0]; b.Parallel != 1 || b.ParallelRequested != 2 {
		t.Errorf("batch parallel %d, requested %d; want 1 and 2", b.Parallel, b.ParallelRequested)
	}
}

func TestServerGateURLsStandInForTheConfigs(t *testing.T) {
	t.Parallel()
	plan := func(urls string) *rollout.Plan {
		cfg, problems := repoconfig.Load([]byte(fmt.Sprintf(parallelConfig, urls)))
		if len(problems) > 0 {
			t.Fatalf("config: %v", problems)
		}
		env, _ := cfg.Environment("checkout", "prod")
		return env.Plan
	}
	srv := Server{PrometheusURL: "http://prom.server", AlertmanagerURL: "http://am.server"}
	for _, tc := range []struct {
		name, urls, prom, am string
	}{
		{"a repository that names none reads the server's", "", "http://prom.server", "http://am.server"},
		{"a repository's own prometheus wins", "prometheus_url: http://prom.repo", "http://prom.repo", "http://am.server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := SnapshotFor(plan(tc.urls), "main", srv).Settings
			if s.PrometheusURL != tc.prom || s.AlertmanagerURL != tc.am {
				t.Errorf("prometheus %q alertmanager %q, want %q %q", s.PrometheusURL, s.AlertmanagerURL, tc.prom, tc.am)
			}
		})
	}
}

func TestRolloutWithoutGitRevisionChecksTheDefaultBranchHead(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "stop", "", time.Minute)
	head := h.gh.PutFile(testRepo, "main", ".github/ripcord.yml", fmt.Sprintf(parallelConfig, ""))
	r := h.startRelease("r3:prod-eu/prod", "")
	if r.HeadSHA != head {
		t.Fatalf("check run commit %q, want the head of main %q", r.HeadSHA, head)
	}
	st, err := h.x.Status(context.Background(), h.id)
	if err != nil {
		t.Fatal(err)
	}
	if st.HeadSHA != head || !strings.Contains(st.HeadFrom, "no git_revision") || !strings.Contains(st.HeadFrom, "default branch main") {
		t.Errorf("status head %q from %q; want %s from the default branch main", st.HeadSHA, st.HeadFrom, head)
	}
	// The main branch moves on; the check run stays where the rollout began.
	h.gh.PutFile(testRepo, "main", "README.md", "later")
	w := &checkWorker{x: h.x}
	if err := w.Work(context.Background(), checkJobRow(h, 1)); err != nil {
		t.Fatal(err)
	}
	var on []string
	for _, cr := range h.gh.CheckRuns(testRepo) {
		if cr.Name == CheckName {
			on = append(on, cr.HeadSHA)
		}
	}
	if len(on) != 1 || on[0] != head {
		t.Errorf("ripcord/rollout check runs on %v, want one on %s", on, head)
	}
	for _, cr := range h.gh.CheckRuns(testRepo) {
		if cr.Name == CheckName && !strings.Contains(cr.Summary, "no git_revision") {
			t.Errorf("the check run does not say why it is on %s:\n%s", head, cr.Summary)
		}
	}

	with := h.startRelease("r4:prod-eu/prod", strings.Repeat("d", 40))
	if with.HeadSHA != strings.Repeat("d", 40) || with.Snapshot.HeadFrom != HeadFromRelease {
		t.Errorf("a release with a git_revision: check on %q from %q", with.HeadSHA, with.Snapshot.HeadFrom)
	}
}
