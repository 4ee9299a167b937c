package rollbackflow

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/rollbackpr"
)

// A rollback pull request that GitHub's rate limit keeps from being opened
// for more than an hour, counted from its first rate-limited try, raises
// one alert naming the release waiting to be rolled back, since when, and
// until when GitHub says the limit lasts; none before the hour, none again
// after it, and the job keeps waiting. The job runs against the fake
// GitHub, which answers every read of the GitOps repository with a
// secondary limit of 20 minutes; the job's clock moves by each snooze (and
// two seconds for River to pick the job up again).
func TestARollbackWaitingForGitHubsRateLimitForMoreThanAnHourAlertsOnce(t *testing.T) {
	testdb.Each(t, func(t *testing.T, dbURL string) {
		db, st := history(t, dbURL, 3, 0)
		gh := githubtest.NewServer(t)
		gh.Handle("GET /repos/{owner}/{repo}", func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "1200")
			w.WriteHeader(http.StatusForbidden)
			body, _ := json.Marshal(map[string]string{"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
				"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"})
			_, _ = w.Write(body)
		})
		now := time.Now().UTC()
		for _, q := range []string{`INSERT INTO installations (id, created_at, updated_at) VALUES ($1, $2, $2)`,
			`INSERT INTO installation_repositories (installation_id, repository, added_at) VALUES ($1, 'acme/gitops', $2)`} {
			if _, err := db.Write.Exec(q, githubtest.InstallationID, store.Micros(now)); err != nil {
				t.Fatal(err)
			}
		}
		cc, err := ghclient.New(ghclient.Config{AppID: githubtest.AppID, PrivateKey: githubtest.AppPrivateKey(t), APIURL: gh.URL()})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var alerts []records.Effect
		clock := now
		w := &pullRequestWorker{deps: pipeline.Deps{DB: db, Records: st, GitHub: cc, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Now: func() time.Time { return clock },
			RaiseAlert: func(e records.Effect) {
				mu.Lock()
				defer mu.Unlock()
				alerts = append(alerts, e)
			}}}
		rec := records.Record{ReleaseID: "r3-rollback", RollbackOf: "r3", Kind: records.KindRollback, App: "checkout",
			Environment: "prod", Cluster: "prod-eu", Repository: "acme/checkout"}
		job := &river.Job[PullRequestArgs]{JobRow: &rivertype.JobRow{Attempt: 1, MaxAttempts: jobAttempts},
			Args: argsFor(Plan{Target: "r1", Record: rec, Request: rollbackpr.Request{Repository: "acme/gitops"}}, nil)}
		alerted := func() int {
			mu.Lock()
			defer mu.Unlock()
			return len(alerts)
		}

		first := now
		stamp := func(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }
		var alertUntil string // until when GitHub said the limit lasts, at the try that alerted
		for try := 1; try <= 7; try++ {
			err := w.Work(context.Background(), job)
			var snooze *river.JobSnoozeError
			if !errors.As(err, &snooze) {
				t.Fatalf("try %d at +%s: %v, want the job snoozed for GitHub's rate limit", try, clock.Sub(first), err)
			}
			// go-github remembers the secondary limit by the wall clock,
			// which the job's clock has left behind: later tries are
			// refused without a request, a few milliseconds short of 20m.
			if snooze.Duration < 19*time.Minute || snooze.Duration > 20*time.Minute {
				t.Fatalf("try %d: snoozed %s, want the 20m GitHub asked for: the job keeps waiting", try, snooze.Duration)
			}
			want := 0
			if clock.Sub(first) > time.Hour {
				want = 1
			}
			if n := alerted(); n != want {
				t.Fatalf("try %d, %s after the first rate-limited try: %d alerts, want %d", try, clock.Sub(first), n, want)
			}
			if want == 1 && alertUntil == "" {
				alertUntil = stamp(clock.Add(snooze.Duration))
			}
			clock = clock.Add(snooze.Duration + 2*time.Second)
		}

		a := alerts[0]
		if a.Kind != records.EffectAlert || a.Type != records.AlertRollbackRateLimited || a.ReleaseID != "r3" {
			t.Errorf("alert %+v, want a %s alert on r3, the release waiting to be rolled back", a, records.AlertRollbackRateLimited)
		}
		for _, s := range []string{"r3", "r3-rollback", "GitHub's rate limit", "since " + stamp(first), "until " + alertUntil} {
			if !strings.Contains(a.Message, s) {
				t.Errorf("alert message %q does not say %q", a.Message, s)
			}
		}
		if a.Data["since"] != stamp(first) || a.Data["until"] != alertUntil {
			t.Errorf("alert data %v, want since %s and until %s", a.Data, stamp(first), alertUntil)
		}
		events, err := st.Audit(context.Background(), records.AuditFilter{ReleaseID: "r3", Type: records.AuditRollbackRateLimited, Oldest: true})
		if err != nil {
			t.Fatal(err)
		}
		var waits, alertEvents int
		for _, e := range events {
			if e.Data["alert"] == true {
				alertEvents++
				if !strings.Contains(e.Message, "since "+stamp(first)) {
					t.Errorf("the alert's audit event says %q, want since %s", e.Message, stamp(first))
				}
				continue
			}
			waits++
		}
		if waits != 7 || alertEvents != 1 {
			t.Errorf("rollback_rate_limited events on r3: %d waits and %d alerts, want 7 (one per reset named) and 1", waits, alertEvents)
		}
	})
}
