package records

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

// twinStores are two PostgreSQL databases fed the same steps: facts reach
// one through ApplyFact, one fact per transaction, and the other through
// ApplyFacts, a batch per transaction. The batch path must not be told
// apart from the first by anything it returns or stores.
type twinStores struct{ one, batch *Store }

func newTwinStores(t *testing.T) twinStores {
	t.Helper()
	one, _ := openStore(t, testdb.URL(t, "postgres"))
	batch, _ := openStore(t, testdb.URL(t, "postgres"))
	return twinStores{one: one, batch: batch}
}

// batchStep registers a release, stores a record of the past as it is,
// or delivers facts as one batch.
type batchStep struct {
	open  *Record
	past  *Record
	facts []BatchFact
	// want, when set, are the batch's outcomes in order.
	want []Outcome
}

// play runs steps on both stores from empty tables, fails at the first
// Result that differs, and compares the stored tables at the end. It
// returns the batch path's Results of each step.
func (tw twinStores) play(t *testing.T, steps []batchStep) [][]Result {
	t.Helper()
	truncate(t, tw.one)
	truncate(t, tw.batch)
	var all [][]Result
	for i, st := range steps {
		if st.open != nil {
			openRelease(t, tw.one, *st.open)
			openRelease(t, tw.batch, *st.open)
			all = append(all, nil)
			continue
		}
		if st.past != nil {
			putRecord(t, tw.one, *st.past)
			putRecord(t, tw.batch, *st.past)
			all = append(all, nil)
			continue
		}
		got := applyFacts(t, tw.batch, st.facts)
		for j, bf := range st.facts {
			want := applyFact(t, tw.one, bf.Fact, bf.DeliveryID, bf.Now)
			if !reflect.DeepEqual(got[j], want) {
				t.Fatalf("step %d, fact %d (%s): the batch path's result differs from ApplyFact's:\n  batch %+v\n  one   %+v",
					i, j, describeFact(bf.Fact), got[j], want)
			}
			if st.want != nil && got[j].Outcome != st.want[j] {
				t.Fatalf("step %d, fact %d (%s): outcome %s (%s), want %s", i, j, describeFact(bf.Fact), got[j].Outcome, got[j].Reason, st.want[j])
			}
		}
		all = append(all, got)
	}
	for _, table := range storedTables {
		if one, batch := dumpTable(t, tw.one, table), dumpTable(t, tw.batch, table); !slices.Equal(one, batch) {
			t.Errorf("%s differ:\n  ApplyFact  %q\n  ApplyFacts %q", table, one, batch)
		}
	}
	return all
}

// storedTables read every row a fact may write, as text, in a stable
// order: audit events in the order written, without their identities.
var storedTables = []string{
	`SELECT r::text FROM records r ORDER BY release_id`,
	`SELECT o::text FROM observations o ORDER BY key`,
	`SELECT f::text FROM facts f ORDER BY id`,
	`SELECT (type, release_id, delivery_id, fact_id, at, message, data)::text FROM audit_events ORDER BY id`,
}

func dumpTable(t *testing.T, s *Store, query string) []string {
	t.Helper()
	rows, err := s.db.Read.Query(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		out = append(out, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// applyFacts applies a batch in its own transaction. A batch ApplyFacts
// cannot serve goes fact by fact in the same transaction, as its contract
// asks of callers (app/factcommit.go does so).
func applyFacts(t *testing.T, s *Store, facts []BatchFact) []Result {
	t.Helper()
	var res []Result
	err := s.db.InTx(context.Background(), func(tx *sql.Tx) error {
		var err error
		res, err = s.ApplyFacts(context.Background(), tx, facts)
		if !errors.Is(err, ErrBatchUnsupported) {
			return err
		}
		res = make([]Result, len(facts))
		for i, bf := range facts {
			if res[i], err = s.ApplyFact(context.Background(), tx, bf.Fact, bf.DeliveryID, bf.Now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("apply a batch of %d facts: %v", len(facts), err)
	}
	return res
}

// batched turns replay steps into batch steps: runs of deliveries
// between registrations go in batches of up to size facts, each fact at
// its own minute and with its own delivery id.
func batched(steps []replayStep, size int) []batchStep {
	var out []batchStep
	for i, st := range steps {
		if st.open != nil {
			out = append(out, batchStep{open: st.open})
			continue
		}
		if n := len(out); n == 0 || out[n-1].open != nil || len(out[n-1].facts) == size {
			out = append(out, batchStep{})
		}
		last := &out[len(out)-1]
		last.facts = append(last.facts, BatchFact{Fact: st.fact, DeliveryID: fmt.Sprintf("delivery-%d", i), Now: at(st.now)})
		last.want = append(last.want, st.want)
	}
	return out
}

// deliverAll is one batch of facts, each delivered at its own minute.
func deliverAll(want []Outcome, facts ...Fact) batchStep {
	st := batchStep{want: want}
	for i, f := range facts {
		st.facts = append(st.facts, BatchFact{Fact: f, DeliveryID: fmt.Sprintf("request-%d", i), Now: f.ObservedAt.Add(30e9)})
	}
	return st
}

func registered(r Record) batchStep { return batchStep{open: &r} }

func stored(r Record) batchStep { return batchStep{past: &r} }

func outcomes(os ...Outcome) []Outcome { return os }
