package app

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

// submitAt is heldQueue.submit with the request's time given, so that
// requests of one batch can change a record at the same instant. The
// request must belong to the held queue (on PostgreSQL, requests spread
// over queues by the clusters they name).
func (h *heldQueue) submitAt(t *testing.T, s *Server, now time.Time, facts ...records.Fact) <-chan batchAnswer {
	t.Helper()
	if key := s.factQueueKey(facts); key != h.key {
		t.Fatalf("a request naming %s goes to queue %q, not the held %q: pick facts of the held queue's clusters", facts[0].Cluster, key, h.key)
	}
	answer := make(chan batchAnswer, 1)
	h.qs.Lock()
	n := len(h.q.waiting)
	h.qs.Unlock()
	go func() {
		results, err := s.commitFacts(facts, now)
		answer <- batchAnswer{results, err}
	}()
	for queued := n; queued == n; {
		time.Sleep(time.Millisecond)
		h.qs.Lock()
		queued = len(h.q.waiting)
		h.qs.Unlock()
	}
	return answer
}

// openRevisedRelease opens worker w's release with a repository and a
// commit, so changes to it queue release checks and deployment syncs.
func openRevisedRelease(t *testing.T, srv *Server, w int, now time.Time) {
	t.Helper()
	r := records.Record{ReleaseID: fmt.Sprintf("bench-%d", w), App: fmt.Sprintf("app-%d", w), Environment: "prod",
		Cluster: fmt.Sprintf("cluster-%d", w%8), Repository: "acme/checkout", Kind: records.KindPromote,
		Image: benchImage(w), GitRevision: "9b1e0c7d2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c", CreatedAt: now}
	err := srv.db.InTx(context.Background(), func(tx *sql.Tx) error {
		_, _, err := srv.records.OpenRelease(context.Background(), tx, r, now)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func countRows(t *testing.T, srv *Server, query string, args ...any) int {
	t.Helper()
	var n int
	if err := srv.db.Read.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// Two facts about one release at one instant make two equal jobs, which
// River refuses in one insert: the batch must queue each job once, and
// not fail over to applying fact by fact.
func TestFactBatchQueuesTheJobsOfARecordChangedTwiceAtOneInstant(t *testing.T) {
	t.Parallel()
	for _, engine := range testdb.Engines {
		t.Run(engine, func(t *testing.T) {
			s, logs := factCommitServerLogging(t, engine)
			now := time.Now().UTC().Truncate(time.Second)
			openRevisedRelease(t, s, 0, now)
			progressing := benchFact(0, 2, records.PhaseProgressing, now)
			healthy := benchFact(0, 3, records.PhaseHealthy, now.Add(time.Second))

			h := holdFactQueue(t, s, []records.Fact{progressing})
			first := h.submitAt(t, s, now.Add(time.Minute), progressing)
			second := h.submitAt(t, s, now.Add(time.Minute), healthy)
			h.release()
			for i, ch := range []<-chan batchAnswer{first, second} {
				if got := <-ch; got.err != nil || got.results[0].Outcome != "applied" {
					t.Fatalf("request %d: %+v, %v; want applied", i, got.results, got.err)
				}
			}
			for _, kind := range []string{"release_check", "deployment_sync"} {
				if n := countRows(t, s, `SELECT count(*) FROM river_job WHERE kind = $1`, kind); n != 1 {
					t.Errorf("%d %s jobs queued, want 1 for the release's one version", n, kind)
				}
			}
			if warned := logs.String(); strings.Contains(warned, batchFailedAsOne) {
				t.Errorf("the batch was run again: %s", warned)
			}
		})
	}
}

func TestFactRequestChangingOneReleaseTwiceAtOneInstantIsApplied(t *testing.T) {
	t.Parallel()
	for _, engine := range testdb.Engines {
		t.Run(engine, func(t *testing.T) {
			s := factCommitServer(t, engine)
			now := time.Now().UTC().Truncate(time.Second)
			openRevisedRelease(t, s, 0, now)
			results, err := s.commitFacts([]records.Fact{benchFact(0, 2, records.PhaseProgressing, now),
				benchFact(0, 3, records.PhaseHealthy, now.Add(time.Second))}, now.Add(time.Minute))
			if err != nil || len(results) != 2 || results[1].State != "healthy" {
				t.Errorf("one request moving a release twice: %+v, %v; want both applied, healthy at the end", results, err)
			}
		})
	}
}

// factCommitServerLogging is factCommitServer with its warnings kept.
func factCommitServerLogging(t *testing.T, engine string) (*Server, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	srv, err := New(context.Background(), testConfig(testdb.MigratedURL(t, engine)),
		Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.writer.Close()
		srv.close()
	})
	return srv, logs
}

// syncBuffer is a bytes.Buffer for a logger shared by goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestDistinctVersionsKeepsTheFirstOfEachReleaseVersion(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	rec := func(id string, s records.State, m int) records.Record {
		return records.Record{ReleaseID: id, State: s, UpdatedAt: at.Add(time.Duration(m) * time.Minute)}
	}
	got := distinctVersions([]records.Record{
		rec("R1", records.StateProgressing, 0), rec("R2", records.StateHealthy, 0),
		rec("R1", records.StateHealthy, 0), rec("R1", records.StatePaused, 1),
	})
	want := []records.Record{rec("R1", records.StateProgressing, 0), rec("R2", records.StateHealthy, 0), rec("R1", records.StatePaused, 1)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("distinctVersions = %+v\nwant %+v (a release's later version is another job)", got, want)
	}
}

// A task fact that names no cluster changes a record of cluster-3, which
// no fact of its batch names: the batch cannot be applied in one go, and
// goes fact by fact in the same transaction.
func TestFactBatchAppliesAReleaseOfAClusterNoFactNames(t *testing.T) {
	t.Parallel()
	for _, engine := range testdb.Engines {
		t.Run(engine, func(t *testing.T) {
			s := factCommitServer(t, engine)
			now := time.Now().UTC().Truncate(time.Second)
			openBenchRelease(t, s, 1, now)
			openBenchRelease(t, s, 3, now)
			cluster1 := benchFact(1, 2, records.PhaseProgressing, now)
			task := records.Fact{Source: records.SourceTask, Repository: "acme/checkout", WorkflowRunID: 77, RunAttempt: 1,
				Status: records.TaskSuccess, App: "app-3", Environment: "prod", ReleaseID: "bench-3", ObservedAt: now}

			h := holdFactQueue(t, s, []records.Fact{cluster1})
			a := h.submitAt(t, s, now, cluster1)
			b := h.submitAt(t, s, now, task)
			h.release()
			for i, ch := range []<-chan batchAnswer{a, b} {
				if got := <-ch; got.err != nil || got.results[0].Outcome != "applied" {
					t.Errorf("request %d: %+v, %v; want applied", i, got.results, got.err)
				}
			}
			if rec, err := s.records.Get(context.Background(), "bench-3"); err != nil || rec.State != records.StateHealthy {
				t.Errorf("bench-3 after the workflow's success: %+v, %v; want healthy", rec, err)
			}
		})
	}
}

// TestFactBatchAnswersAsFactByFact sends one batch of requests whose facts
// depend on each other to a server on each engine: SQLite applies them
// fact by fact, PostgreSQL in one go, and every answer must be the same.
func TestFactBatchAnswersAsFactByFact(t *testing.T) {
	t.Parallel()
	if os.Getenv(testdb.PostgresEnv) == "" {
		t.Skipf("compares SQLite's answers with PostgreSQL's: set %s", testdb.PostgresEnv)
	}
	// The requests name clusters of one PostgreSQL queue, so they form
	// one batch there too.
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	opened := records.Fact{Source: records.SourceTask, Cluster: "cluster-4", Repository: "acme/checkout", WorkflowRunID: 9,
		RunAttempt: 1, Status: records.TaskInProgress, App: "app-4", Environment: "prod", ReleaseID: "bench-4", ObservedAt: now}
	stale := benchFact(2, 2, records.PhaseHealthy, now)
	stale.ObservedGeneration = 1
	requests := [][]records.Fact{
		{benchFact(0, 2, records.PhaseProgressing, now), benchFact(0, 3, records.PhaseHealthy, now.Add(time.Second))},
		{benchFact(0, 3, records.PhaseHealthy, now.Add(time.Second))}, // a repeat
		{opened, benchFact(4, 2, records.PhaseHealthy, now.Add(2*time.Second))},
		{stale, benchFact(2, 2, records.PhaseProgressing, now)}, // not trusted, then applied
		{benchFact(6, 2, records.PhaseProgressing, now)},        // no release: drift
	}
	answers := map[string][]batchAnswer{}
	for _, engine := range testdb.Engines {
		s := factCommitServer(t, engine)
		openBenchRelease(t, s, 0, now)
		openBenchRelease(t, s, 2, now)
		h := holdFactQueue(t, s, requests[0])
		var chans []<-chan batchAnswer
		for _, r := range requests {
			chans = append(chans, h.submitAt(t, s, now.Add(time.Minute), r...))
		}
		h.release()
		for _, ch := range chans {
			answers[engine] = append(answers[engine], <-ch)
		}
	}
	var outcomes []string
	for i, got := range answers["postgres"] {
		want := answers["sqlite"][i]
		if got.err != nil || want.err != nil || !reflect.DeepEqual(got.results, want.results) {
			t.Errorf("request %d: PostgreSQL answers %+v (%v), SQLite %+v (%v)", i, got.results, got.err, want.results, want.err)
		}
		for _, r := range got.results {
			outcomes = append(outcomes, r.Outcome)
		}
	}
	want := []string{"applied", "applied", "duplicate", "opened", "applied", "ignored", "applied", "drift"}
	if !slices.Equal(outcomes, want) {
		t.Errorf("outcomes %v, want %v", outcomes, want)
	}
}

// The batch notes, once per release, why releases without a commit get
// no GitHub deployment, as request by request does.
func TestFactBatchNotesWhyItsReleasesHaveNoDeployment(t *testing.T) {
	t.Parallel()
	for _, engine := range testdb.Engines {
		t.Run(engine, func(t *testing.T) {
			s := factCommitServer(t, engine)
			now := time.Now().UTC().Truncate(time.Second)
			openBenchRelease(t, s, 0, now)
			openBenchRelease(t, s, 8, now) // cluster-0 as well
			h := holdFactQueue(t, s, []records.Fact{benchFact(0, 2, records.PhaseProgressing, now)})
			var chans []<-chan batchAnswer
			for _, f := range []records.Fact{benchFact(0, 2, records.PhaseProgressing, now), benchFact(8, 2, records.PhaseProgressing, now),
				benchFact(0, 3, records.PhaseHealthy, now.Add(time.Second))} {
				chans = append(chans, h.submitAt(t, s, now.Add(time.Minute), f))
			}
			h.release()
			for i, ch := range chans {
				if got := <-ch; got.err != nil {
					t.Fatalf("request %d: %v", i, got.err)
				}
			}
			for _, rel := range []string{"bench-0", "bench-8"} {
				if n := countRows(t, s, `SELECT count(*) FROM deployments WHERE release_id = $1 AND skipped LIKE '%git_revision%'`, rel); n != 1 {
					t.Errorf("%s: %d notes of why it has no deployment, want 1 naming the missing git_revision", rel, n)
				}
			}
		})
	}
}
