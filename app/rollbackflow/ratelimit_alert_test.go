package rollbackflow

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/ghlimit"
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
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		lr := limitedRollback(t, dbURL, 20*time.Minute)

		first := lr.clock
		stamp := func(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }
		var alertUntil string // until when GitHub said the limit lasts, at the try that alerted
		for try := 1; try <= 7; try++ {
			err := lr.w.Work(context.Background(), lr.job)
			var snooze *river.JobSnoozeError
			if !errors.As(err, &snooze) {
				t.Fatalf("try %d at +%s: %v, want the job snoozed for GitHub's rate limit", try, lr.clock.Sub(first), err)
			}
			// go-github remembers the secondary limit by the wall clock,
			// which the job's clock has left behind: later tries are
			// refused without a request, a few milliseconds short of 20m.
			if snooze.Duration < 19*time.Minute || snooze.Duration > 20*time.Minute {
				t.Fatalf("try %d: snoozed %s, want the 20m GitHub asked for: the job keeps waiting", try, snooze.Duration)
			}
			want := 0
			if lr.clock.Sub(first) > time.Hour {
				want = 1
			}
			if n := lr.alerted(); n != want {
				t.Fatalf("try %d, %s after the first rate-limited try: %d alerts, want %d", try, lr.clock.Sub(first), n, want)
			}
			if want == 1 && alertUntil == "" {
				alertUntil = stamp(lr.clock.Add(snooze.Duration))
			}
			lr.clock = lr.clock.Add(snooze.Duration + 2*time.Second)
		}

		a := lr.alerts[0]
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
		events, err := lr.st.Audit(context.Background(), records.AuditFilter{ReleaseID: "r3", Type: records.AuditRollbackRateLimited, Oldest: true})
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

// limitedRollbackJob is the job of rollback r3-rollback (of r3) against
// the fake GitHub, which answers every read of the GitOps repository with
// a secondary limit of retryAfter. The job's clock, which the test moves,
// starts at the wall clock's time: go-github remembers the limit by the
// wall clock, so later tries are refused without a request, a few
// milliseconds short of retryAfter.
type limitedRollbackJob struct {
	w     *pullRequestWorker
	job   *river.Job[PullRequestArgs]
	st    *records.Store
	clock time.Time

	mu     sync.Mutex
	alerts []records.Effect
}

func limitedRollback(t *testing.T, dbURL string, retryAfter time.Duration) *limitedRollbackJob {
	t.Helper()
	db, st := history(t, dbURL, 3, 0)
	gh := githubtest.NewServer(t)
	gh.Handle("GET /repos/{owner}/{repo}", func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", strconv.Itoa(int(retryAfter/time.Second)))
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
	lr := &limitedRollbackJob{st: st, clock: now}
	lr.w = &pullRequestWorker{deps: pipeline.Deps{DB: db, Records: st, GitHub: cc, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now: func() time.Time { return lr.clock },
		RaiseAlert: func(e records.Effect) {
			lr.mu.Lock()
			defer lr.mu.Unlock()
			lr.alerts = append(lr.alerts, e)
		}}}
	rec := records.Record{ReleaseID: "r3-rollback", RollbackOf: "r3", Kind: records.KindRollback, App: "checkout",
		Environment: "prod", Cluster: "prod-eu", Repository: "acme/checkout"}
	lr.job = &river.Job[PullRequestArgs]{JobRow: &rivertype.JobRow{Attempt: 1, MaxAttempts: jobAttempts},
		Args: argsFor(Plan{Target: "r1", Record: rec, Request: rollbackpr.Request{Repository: "acme/gitops"}}, nil)}
	return lr
}

func (lr *limitedRollbackJob) alerted() int {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return len(lr.alerts)
}

// The alert comes an hour after the first rate-limited try, not at the
// first try after that hour: GitHub asks for 59 minutes each time, so the
// second try comes just before the hour, and a wait as long as GitHub asks
// would put the next try, the first after the hour, at nearly two hours.
// The job wakes at the hour instead, alerts, and from then on waits as
// long as GitHub asks again.
func TestARollbackWaitingForGitHubsRateLimitAlertsAnHourAfterItsFirstTry(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		lr := limitedRollback(t, dbURL, 59*time.Minute)
		const pickUp = 2 * time.Second // River picking the job up after its snooze
		first := lr.clock
		alertedAt := time.Time{}
		var waits []time.Duration
		for try := 1; try <= 4; try++ {
			err := lr.w.Work(context.Background(), lr.job)
			var snooze *river.JobSnoozeError
			if !errors.As(err, &snooze) {
				t.Fatalf("try %d at +%s: %v, want the job snoozed for GitHub's rate limit", try, lr.clock.Sub(first), err)
			}
			if lr.alerted() > 0 && alertedAt.IsZero() {
				alertedAt = lr.clock
			}
			waits = append(waits, snooze.Duration)
			lr.clock = lr.clock.Add(snooze.Duration + pickUp)
		}

		if n := lr.alerted(); n != 1 {
			t.Fatalf("%d alerts over 4 tries (waits %v), want 1", n, waits)
		}
		// Two pick-ups: after the first try's wait and after the one cut
		// short at the hour.
		if late := alertedAt.Sub(first); late < ghlimit.AlertAfter || late > ghlimit.AlertAfter+2*pickUp {
			t.Errorf("alerted %s after the first rate-limited try (waits %v), want an hour after it, give or take River's pick-ups",
				late, waits)
		}
		// Once alerted, the job waits as long as GitHub asks again.
		if last := waits[len(waits)-1]; last < 58*time.Minute {
			t.Errorf("after the alert the job waited %s (waits %v), want the 59m GitHub asked for", last, waits)
		}
	})
}
