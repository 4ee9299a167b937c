package records

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

// TestConcurrentFactsOfOneTargetLoseNoUpdate applies the facts of twenty
// releases of one app, environment and cluster from twenty goroutines (half
// of them finishing with a workflow's task fact that names no cluster), each
// fact in its own transaction, as twenty replicas would. Whatever the order,
// a serial application ends the same way: the newest release healthy and
// every other one superseded, exactly one service.deployed, and each
// record's state_changed events forming one unbroken chain. A lost update
// (two transactions deciding on the same siblings) breaks one of these.
func TestConcurrentFactsOfOneTargetLoseNoUpdate(t *testing.T) {
	t.Parallel()
	const n = 20
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		rels := make([]string, n)
		for i := range n {
			rels[i] = fmt.Sprintf("C%02d", i)
			openRelease(t, s, record(rels[i], "", i))
		}
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			results []Result
			start   = make(chan struct{})
		)
		for i, rel := range rels {
			workload := func(f *Fact) { f.Name, f.UID = "w-"+rel, "uid-"+rel }
			facts := []Fact{
				fact(rel, PhaseProgressing, 30+i, workload),
				fact(rel, PhaseHealthy, 60+i, workload, step(4)),
			}
			if i%2 == 1 {
				// The workflow reports success without naming the cluster:
				// it must serialise with the cluster's facts all the same.
				facts[1] = taskFact(rel, TaskSuccess, 60+i, func(f *Fact) { f.Cluster, f.WorkflowRunID = "", int64(1000+i) })
			}
			wg.Go(func() {
				<-start
				for _, f := range facts {
					var res Result
					err := s.db.InTx(context.Background(), func(tx *sql.Tx) error {
						var err error
						res, err = s.ApplyFact(context.Background(), tx, f, "", at(100))
						return err
					})
					if err != nil {
						t.Errorf("apply %s: %v", describeFact(f), err) // not Fatal: another goroutine
						return
					}
					mu.Lock()
					results = append(results, res)
					mu.Unlock()
				}
			})
		}
		close(start)
		wg.Wait()

		for rel, state := range storedStates(t, s, rels...) {
			want := StateSuperseded
			if rel == rels[n-1] {
				want = StateHealthy
			}
			if state != want {
				t.Errorf("%s ended %s, want %s", rel, state, want)
			}
		}
		deployed := 0
		for _, res := range results {
			for _, e := range res.Effects {
				if e.Type == CDEventServiceDeployed {
					deployed++
				}
			}
		}
		if deployed != 1 {
			t.Errorf("%d service.deployed events, want exactly 1 (the first release to become healthy)", deployed)
		}
		for _, rel := range rels {
			checkStateChain(t, s, rel)
		}
	})
}

// checkStateChain: a record's state_changed events, oldest first, start
// at opened, each leaves from where the previous one arrived, and the last
// arrives at the stored state.
func checkStateChain(t *testing.T, s *Store, rel string) {
	t.Helper()
	evs, err := s.Audit(context.Background(), AuditFilter{ReleaseID: rel, Type: AuditStateChanged, Oldest: true, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	state := string(StateOpened)
	for _, e := range evs {
		if e.Data["from"] != state {
			t.Errorf("%s: state_changed %v -> %v, but it was %s (events: %d)", rel, e.Data["from"], e.Data["to"], state, len(evs))
			return
		}
		state = fmt.Sprint(e.Data["to"])
	}
	if stored := mustGet(t, s, rel).State; string(stored) != state {
		t.Errorf("%s is stored %s, but its events end at %s", rel, stored, state)
	}
}

func TestConcurrentOpensOfOneReleaseOpenItOnce(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 10 {
			wg.Go(func() {
				<-start
				err := s.db.InTx(context.Background(), func(tx *sql.Tx) error {
					_, _, err := s.OpenRelease(context.Background(), tx, record("R1", "", 0), at(0))
					return err
				})
				if err != nil {
					t.Errorf("retried open: %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		if n := count(t, s, `SELECT COUNT(*) FROM audit_events WHERE type = 'release_opened'`); n != 1 {
			t.Errorf("%d release_opened events, want 1", n)
		}
	})
}
