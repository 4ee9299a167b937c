package webui

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/eligibility"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/repoconfig"
)

// The releases page lists the newest listLimit records, but what it says
// of each (current, eligible, a rollback hint for its cluster) rests on the
// newest releases of that record's own app, environment and cluster,
// however many newer records of other targets the store holds.
func TestReleasesPageJudgesEachTargetByItsOwnNewestReleases(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		f := newFixture(t, dbURL)
		at := func(d time.Duration) time.Time { return t0.Add(d) }
		const repo = "acme/shop"
		// Old history, pushed out of the newest listLimit records by the
		// noise below.
		var old []release
		for _, r := range []struct {
			id, env, cluster, image string
			status                  records.TaskStatus
		}{
			{"eu-1", "production", "eu-1", "shop:v1", records.TaskSuccess},
			{"eu-2", "production", "eu-1", "shop:v2", records.TaskSuccess},
			{"us-1", "production", "us-1", "shop:v1", records.TaskSuccess},
			{"st-1", "staging", "eu-1", "shop:v1", records.TaskSuccess},
			{"st-2", "staging", "eu-1", "shop:v2", records.TaskSuccess},
		} {
			old = append(old, release{r.id, "shop", r.env, r.cluster, repo, r.image, r.status, at(time.Duration(len(old)) * time.Minute)})
		}
		var noise []release
		for i := range listLimit + 10 {
			noise = append(noise, release{fmt.Sprintf("noise-%03d", i), "noise", "production", "eu-1", repo,
				fmt.Sprintf("noise:v%d", i), records.TaskSuccess, at(time.Hour + time.Duration(i)*time.Second)})
		}
		f.reportAll(t, append(old, noise...))
		// The newest records: each target's newest release.
		f.reportAll(t, []release{
			{"eu-3", "shop", "production", "eu-1", repo, "shop:v3", records.TaskFailed, at(2 * time.Hour)},
			{"us-2", "shop", "production", "us-1", repo, "shop:v1", records.TaskFailed, at(2*time.Hour + time.Minute)},
			{"us-3", "shop", "production", "us-1", repo, "shop:v3", records.TaskFailed, at(2*time.Hour + 2*time.Minute)},
		})
		f.open(t, records.Record{ReleaseID: "st-3", App: "shop", Environment: "staging", Cluster: "eu-1", Repository: repo,
			Image: "shop:v3", Kind: records.KindPromote, CreatedAt: at(2*time.Hour + 3*time.Minute)})

		app := appWith("https://github.example/")
		gh := newFakeGitHub()
		_, mux := newTestHandler(f, publicURL, "https://api.github.example/", func() pipeline.AppIdentity { return app }, gh, now)
		w := get(t, mux, "/", sessionCookieFor(t, app, "alice", "tok-alice"))
		b := body(w)
		if w.Code != http.StatusOK {
			t.Fatalf("GET / = %d\n%s", w.Code, b)
		}
		for _, want := range []struct{ text, why string }{
			{`data-release-id="st-3"`, "the newest records are listed"},
			{`before <a href="/releases/eu-3">eu-3</a>`,
				"eu-1 of production can go back to eu-2, healthy just before eu-3, the release there"},
			{"--cluster us-1 --to us-2",
				"us-2 ran shop:v1, which reached healthy in us-1, the third-newest release of us-1"},
			{`before <a href="/releases/st-2">st-2</a>`,
				"st-2 runs in staging (st-3 is only opened), and st-1 before it is healthy"},
		} {
			if !strings.Contains(b, want.text) {
				t.Errorf("the page lacks %q: %s", want.text, want.why)
			}
		}
	})
}

// reportAll reports rs in one transaction, as a batch of facts would.
func (f *fixture) reportAll(t testing.TB, rs []release) {
	t.Helper()
	err := f.db.InTx(context.Background(), func(tx *sql.Tx) error {
		for _, r := range rs {
			f.run++
			fact := records.Fact{Source: records.SourceTask, Repository: r.repo, WorkflowRunID: f.run, RunAttempt: 1,
				Status: r.status, App: r.app, Environment: r.env, Cluster: r.cluster, ReleaseID: r.id,
				Version: r.image, ObservedAt: r.at}
			if err := fact.Validate(); err != nil {
				return fmt.Errorf("fact for %s: %w", r.id, err)
			}
			if _, err := f.st.ApplyFact(context.Background(), tx, fact, "delivery-"+r.id, r.at); err != nil {
				return fmt.Errorf("apply fact for %s: %w", r.id, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A release's page judges it by its target's newest releases that ran,
// however many unmerged (opened) releases are newer: more of them than
// eligibility.ReadAhead used to fill the records the page read, so the
// current release lost its Roll back form (the eligible release before it
// was not read) and a release past the window was called eligible (it was
// counted from the few releases that were read).
func TestReleasePageIgnoresManyOpenedReleases(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		f := newFixture(t, dbURL)
		const repo = "acme/shop"
		at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
		// r0 and r1 healthy, r2..r5 failed: r5 runs, r1 is the fifth
		// newest that ran (eligible), r0 the sixth (past the window).
		var ran []release
		for i := range 6 {
			status := records.TaskFailed
			if i < 2 {
				status = records.TaskSuccess
			}
			ran = append(ran, release{fmt.Sprintf("r%d", i), "shop", "production", "eu-1", repo,
				fmt.Sprintf("shop:v%d", i), status, at(i)})
		}
		f.reportAll(t, ran)
		for i := range eligibility.ReadAhead + 1 {
			f.open(t, records.Record{ReleaseID: fmt.Sprintf("pending-%02d", i), App: "shop", Environment: "production",
				Cluster: "eu-1", Repository: repo, Image: fmt.Sprintf("shop:v%d", 10+i), Kind: records.KindPromote,
				CreatedAt: at(10 + i)})
		}
		app := appWith("https://github.example/")
		_, mux := newTestHandler(f, publicURL, "https://api.github.example/", func() pipeline.AppIdentity { return app }, newFakeGitHub(), now)
		cookie := sessionCookieFor(t, app, "alice", "tok-alice")
		page := func(id string) string {
			w := get(t, mux, "/releases/"+id, cookie)
			if w.Code != http.StatusOK {
				t.Fatalf("GET /releases/%s = %d\n%s", id, w.Code, body(w))
			}
			return body(w)
		}
		if b := page("r5"); !strings.Contains(b, `id="rollback"`) || !strings.Contains(b, "the current release here") {
			t.Errorf("r5 runs and r1 before it is eligible: its page lacks the current release's Roll back form")
		}
		if b := page("r1"); !strings.Contains(b, `<span class="state ok">eligible</span>`) {
			t.Errorf("r1, healthy and the fifth newest release that ran, is not shown eligible")
		}
		if b := page("r0"); strings.Contains(b, `<span class="state ok">eligible</span>`) ||
			!strings.Contains(b, "only the newest 5 count") {
			t.Errorf("r0, the sixth newest release that ran, is not shown past the window of 5")
		}
	})
}

// The pages judge eligibility with the repository's eligibility.window, as
// the gates and rollbacks do, not with the default of 5: with a window of
// 7, the seventh newest release that ran is a rollback target on both
// pages. Until ripcord has read the repository's config (none is kept),
// the pages use the default window.
func TestPagesUseTheRepositorysEligibilityWindow(t *testing.T) {
	t.Parallel()
	f := newFixture(t, testdb.URL(t, "sqlite"))
	const repo = "acme/shop"
	// r0 healthy, r1..r6 failed: r6 runs, r0 is the seventh newest.
	var rs []release
	for i := range 7 {
		status := records.TaskFailed
		if i == 0 {
			status = records.TaskSuccess
		}
		rs = append(rs, release{fmt.Sprintf("r%d", i), "shop", "production", "eu-1", repo,
			fmt.Sprintf("shop:v%d", i), status, t0.Add(time.Duration(i) * time.Minute)})
	}
	f.reportAll(t, rs)
	cfg, problems := repoconfig.Load([]byte("version: 1\napps:\n  shop:\n    environments:\n      production:\n        workflows: [deploy.yml]\neligibility: {window: 7}\n"))
	if cfg == nil {
		t.Fatalf("config: %v", problems)
	}
	app := appWith("https://github.example/")
	h, mux := newTestHandler(f, publicURL, "https://api.github.example/", func() pipeline.AppIdentity { return app }, newFakeGitHub(), now)
	cookie := sessionCookieFor(t, app, "alice", "tok-alice")
	page := func(path string) string {
		w := get(t, mux, path, cookie)
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s = %d\n%s", path, w.Code, body(w))
		}
		return body(w)
	}
	const eligible, rollbackTo = `<span class="state ok">eligible</span>`, "--to r0"
	if b := page("/releases/r0"); strings.Contains(b, eligible) || !strings.Contains(b, "only the newest 5 count") {
		t.Errorf("no config kept: r0's page does not use the default window of 5")
	}
	h.configs.Put(repo, cfg, time.Now())
	if b := page("/releases/r0"); !strings.Contains(b, eligible) {
		t.Errorf("window 7: r0, healthy and the seventh newest, is not eligible on its page")
	}
	if b := page("/releases/r6"); !strings.Contains(b, `id="rollback"`) {
		t.Errorf("window 7: the current release r6 has no Roll back form, though r0 is a target")
	}
	b := page("/")
	if !strings.Contains(b, rollbackTo) || !strings.Contains(b, `before <a href="/releases/r6">r6</a>`) {
		t.Errorf("window 7: the releases page does not offer r0 as a rollback target")
	}
	h.configs.Put(repo, nil, time.Now())
	if b := page("/"); strings.Contains(b, rollbackTo) {
		t.Errorf("no config kept: the releases page offers r0, past the default window of 5")
	}
}
