package records

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ripcord/ripcord/internal/store"
)

// On PostgreSQL the facts of group-committed requests (app/factcommit.go)
// are applied as one batch, because there a fact costs its statements,
// not a disk flush: ApplyFact spends about four per fact where a raw
// insert spends one. ApplyFacts reads what Reduce needs for every fact of
// the batch in one statement, reduces fact by fact in Go against an
// overlay that holds what the earlier facts of the batch decided, and
// writes the outcome in one statement. The overlay is what makes facts of
// one batch see each other as they would one transaction after another: a
// record opened or moved, an observation replaced, a fact id kept (so its
// repeat is a duplicate), a sibling superseded.

// BatchFact is one fact of a batch, with what ApplyFact takes beside it.
type BatchFact struct {
	Fact       Fact
	DeliveryID string
	Now        time.Time
}

// ErrBatchUnsupported: ApplyFacts cannot serve the batch (not PostgreSQL,
// or a fact's record lies in a cluster that no fact of the batch names and
// so is not locked). It has written nothing: apply the facts one by one
// with ApplyFact, in the same transaction.
var ErrBatchUnsupported = errors.New("facts cannot be applied as one batch")

// ApplyFacts applies facts in order, each as ApplyFact would one after
// the other in tx, and returns the same Results. It takes the locks of
// every cluster the facts name (none that LockClusters took in tx
// already), then runs one read and one write statement for the whole
// batch. The caller enqueues the Results' effects in the same transaction.
//
// On ErrBatchUnsupported nothing was written. On any other error the
// transaction may be aborted and must be rolled back.
func (s *Store) ApplyFacts(ctx context.Context, tx *sql.Tx, facts []BatchFact) ([]Result, error) {
	if s.db.Dialect != store.Postgres {
		return nil, ErrBatchUnsupported
	}
	if len(facts) == 0 {
		return nil, nil
	}
	facts = atStoredTimes(facts)
	clusters := make([]string, len(facts))
	for i, bf := range facts {
		clusters[i] = bf.Fact.Cluster
	}
	if err := s.lockForBatch(ctx, tx, clusters); err != nil {
		return nil, err
	}
	ov, err := s.readBatch(ctx, tx, facts)
	if err != nil {
		return nil, err
	}
	for _, c := range clusters {
		ov.locked[c] = true
	}
	results := make([]Result, len(facts))
	for i, bf := range facts {
		in, err := ov.input(bf)
		if err != nil {
			return nil, fmt.Errorf("apply fact %d (%s): %w", i, bf.Fact.ID(), err)
		}
		res := Reduce(in)
		if err := ov.save(bf, res); err != nil {
			return nil, fmt.Errorf("apply fact %d (%s): %w", i, res.FactID, err)
		}
		results[i] = res
	}
	if err := s.writeBatch(ctx, tx, ov); err != nil {
		return nil, err
	}
	return results, nil
}

// atStoredTimes is facts with their times at the database's precision, as
// ApplyFact reduces them.
func atStoredTimes(facts []BatchFact) []BatchFact {
	out := make([]BatchFact, len(facts))
	for i, bf := range facts {
		bf.Fact.ObservedAt = storedTime(bf.Fact.ObservedAt)
		bf.Now = storedTime(bf.Now)
		out[i] = bf
	}
	return out
}

// targetKey is an app, environment and cluster: the records that may be
// each other's siblings.
type targetKey struct{ app, environment, cluster string }

func targetOf(r Record) targetKey { return targetKey{r.App, r.Environment, r.Cluster} }

// batchOverlay is the database as the facts of a batch reduced so far see
// it: what the read found, with every decision since laid over it, and
// the writes those decisions owe.
type batchOverlay struct {
	// seen are the fact ids stored or kept by an earlier fact.
	seen map[string]bool
	// obs is the last observation of each workload key read or written.
	obs map[string]Observation
	// recs are every record read (the facts' own and the open ones of
	// their targets) or written, by release id.
	recs map[string]Record
	// targets whose open records were all read: siblings can be told.
	targets map[targetKey]bool
	// healthy: targets where the read found a record with healthy_at.
	healthy map[targetKey]bool
	// locked are the clusters whose locks the batch holds.
	locked map[string]bool

	kept       []keptFact
	opened     map[string]bool // release ids to insert rather than update
	recOrder   []string        // release ids written, first write first
	recWritten map[string]bool
	obsOrder   []string // workload keys written, first write first
	obsWritten map[string]bool
	audit      []AuditEvent
}

// keptFact is a fact row to insert.
type keptFact struct {
	id, releaseID, source string
	receivedAt            int64
	body                  string
}

func newBatchOverlay() *batchOverlay {
	return &batchOverlay{
		seen: map[string]bool{}, obs: map[string]Observation{}, recs: map[string]Record{},
		targets: map[targetKey]bool{}, healthy: map[targetKey]bool{}, locked: map[string]bool{},
		opened: map[string]bool{}, recWritten: map[string]bool{}, obsWritten: map[string]bool{},
	}
}

// input is the Input ApplyFact would load for bf at this point of the
// batch (load and loadRecordAtOnce).
func (o *batchOverlay) input(bf BatchFact) (Input, error) {
	f := bf.Fact
	in := Input{Fact: f, DeliveryID: bf.DeliveryID, Now: bf.Now, Duplicate: o.seen[f.ID()]}
	if prev, ok := o.obs[f.WorkloadKey()]; ok && !f.IsTask() {
		in.Previous = &prev
	} else if _, ok := o.obs[f.legacyKey()]; ok && !f.IsTask() {
		// Once per workload after migration 16: ApplyFact takes the
		// observation stored without a source and removes it.
		return in, fmt.Errorf("the observation of %s was stored without a source: %w", f.WorkloadKey(), ErrBatchUnsupported)
	}
	switch {
	case Repeat(in):
		return in, nil // Reduce looks no further than a repeat.
	case in.Duplicate:
		// A workload back at an earlier phase: rare, and the read left
		// out the records of facts already stored.
		return in, fmt.Errorf("fact %s was stored, but its workload showed something else since: %w", f.ID(), ErrBatchUnsupported)
	}
	key := f.ReleaseKey()
	var tgt targetKey
	if rec, ok := o.recs[key]; ok && key != "" {
		if !o.locked[rec.Cluster] {
			return in, fmt.Errorf("release %s is in cluster %q, which no fact of the batch names: %w", key, rec.Cluster, ErrBatchUnsupported)
		}
		in.Record = &rec
		tgt = targetOf(rec)
	} else if f.IsTask() {
		tgt = targetKey{f.App, f.Environment, f.Cluster}
	} else {
		return in, nil // drift touches no sibling
	}
	if !o.targets[tgt] {
		return in, fmt.Errorf("open releases of %s/%s/%s were not read: %w", tgt.app, tgt.environment, tgt.cluster, ErrBatchUnsupported)
	}
	in.EverHealthy = o.healthy[tgt]
	for _, r := range o.recs {
		if targetOf(r) != tgt {
			continue
		}
		// healthy_at is never cleared, so a record healthy now was healthy
		// in the read or became so earlier in the batch.
		in.EverHealthy = in.EverHealthy || r.HealthyAt != nil
		if r.Open() && r.ReleaseID != key {
			in.Siblings = append(in.Siblings, r)
		}
	}
	sortSiblings(in.Siblings)
	return in, nil
}

// save lays res over the overlay and notes the writes it owes, as save
// would write them at once.
func (o *batchOverlay) save(bf BatchFact, res Result) error {
	for i, r := range res.Records {
		if i == 0 && res.Outcome == OutcomeOpened {
			o.opened[r.ReleaseID] = true
		}
		if !o.recWritten[r.ReleaseID] {
			o.recWritten[r.ReleaseID] = true
			o.recOrder = append(o.recOrder, r.ReleaseID)
		}
		o.recs[r.ReleaseID] = r
	}
	if obs := res.Observation; obs != nil {
		if !o.obsWritten[obs.Key()] {
			o.obsWritten[obs.Key()] = true
			o.obsOrder = append(o.obsOrder, obs.Key())
		}
		o.obs[obs.Key()] = *obs
	}
	if res.KeepFact {
		f := bf.Fact
		f.FactID = res.FactID
		body, err := json.Marshal(f)
		if err != nil {
			return fmt.Errorf("save fact: %w", err)
		}
		o.seen[res.FactID] = true
		o.kept = append(o.kept, keptFact{id: res.FactID, releaseID: f.ReleaseKey(), source: string(f.Source),
			receivedAt: store.Micros(bf.Now), body: string(body)})
	}
	o.audit = append(o.audit, res.Audit...)
	return nil
}
