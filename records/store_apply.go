package records

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/ripcord/ripcord/internal/store"
)

// ApplyFact reduces one fact inside the caller's transaction and saves what
// Reduce decided: the records it returns (the first inserted when a task
// fact opened it, the others updated), the workload's observation, the fact
// itself when it is kept, and the audit events. The caller enqueues the
// Result's effects in the same transaction.
//
// Times are reduced at the database's precision (microseconds, UTC), so
// the records in the Result are exactly what Get reads back.
func (s *Store) ApplyFact(ctx context.Context, tx *sql.Tx, f Fact, deliveryID string, now time.Time) (Result, error) {
	f.ObservedAt = storedTime(f.ObservedAt)
	now = storedTime(now)
	in, err := s.load(ctx, tx, f)
	if err != nil {
		return Result{}, fmt.Errorf("apply fact %s: %w", f.ID(), err)
	}
	in.DeliveryID, in.Now = deliveryID, now
	res := Reduce(in)
	if err := s.save(ctx, tx, f, res, now, replacedLegacy(in, res)); err != nil {
		return Result{}, fmt.Errorf("apply fact %s: %w", res.FactID, err)
	}
	return res, nil
}

// replacedLegacy is the key of the observation stored without a source
// (before migration 16) that the fact's own observation replaces, or ""
// when the workload's observation was found under its own key: only then
// does saving it delete one, so other facts pay no statement for it.
func replacedLegacy(in Input, res Result) string {
	o, prev := res.Observation, in.Previous
	if o == nil || prev == nil || prev.Key() == o.Key() || prev.Key() != o.legacyKey() {
		return ""
	}
	return prev.Key()
}

// load reads what Reduce needs for f, under the lock of every cluster whose
// records the fact may change: the fact's, and the record's when it has
// another (a task fact that names no cluster, a record opened without one).
func (s *Store) load(ctx context.Context, tx *sql.Tx, f Fact) (Input, error) {
	in := Input{Fact: f}
	key := f.ReleaseKey()
	locked := []string{f.Cluster}
	// A record's cluster never changes, so a look before locking finds the
	// second cluster a task fact needs and both are locked in order.
	// Cluster facts, the many, name their cluster and skip the look.
	if s.db.Dialect == store.Postgres && f.IsTask() && key != "" {
		peek, err := s.getRecord(ctx, tx, key)
		if err != nil {
			return in, err
		}
		if peek != nil {
			locked = append(locked, peek.Cluster)
		}
	}
	if err := s.lockClusters(ctx, tx, locked...); err != nil {
		return in, err
	}
	if err := s.loadFactAndWorkload(ctx, tx, &in); err != nil || Repeat(in) {
		return in, err // Reduce looks no further than a repeat.
	}
	if s.db.Dialect == store.Postgres {
		ok, err := s.loadRecordAtOnce(ctx, tx, &in, locked)
		if err != nil || ok {
			return in, err
		}
		// The record is of a cluster not locked yet: lock it and read
		// again, step by step.
		if err := s.lockClusters(ctx, tx, in.Record.Cluster); err != nil {
			return in, err
		}
		locked = append(locked, in.Record.Cluster)
	}
	if key != "" {
		rec, err := s.getRecord(ctx, tx, key)
		if err != nil {
			return in, err
		}
		if rec != nil && !slices.Contains(locked, rec.Cluster) {
			// Rare: a cluster fact met a record without a cluster, or the
			// record was opened between the look and the lock. Should two
			// writers then wait on each other, PostgreSQL aborts one
			// (deadlock detected) and its job runs again.
			if err := s.lockClusters(ctx, tx, rec.Cluster); err != nil {
				return in, err
			}
			if rec, err = s.getRecord(ctx, tx, key); err != nil {
				return in, err
			}
		}
		in.Record = rec
	}
	return in, s.loadTarget(ctx, tx, &in)
}

// loadFactAndWorkload reads whether the fact was seen and, for a cluster
// fact, what its workload showed last (for a seen one too: Repeat needs
// it): its observation, or else one stored without a source under the
// workload's legacy key.
func (s *Store) loadFactAndWorkload(ctx context.Context, tx *sql.Tx, in *Input) error {
	f := in.Fact
	var prev []byte
	err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM facts WHERE id = $1),
		(SELECT body FROM observations WHERE key IN ($2, $3) ORDER BY key = $2 DESC LIMIT 1)`,
		f.ID(), f.WorkloadKey(), f.legacyKey()).Scan(&in.Duplicate, &prev)
	if err != nil {
		return fmt.Errorf("look up fact id and workload: %w", err)
	}
	if len(prev) == 0 || f.IsTask() {
		return nil
	}
	in.Previous = new(Observation)
	if err := json.Unmarshal(prev, in.Previous); err != nil {
		return fmt.Errorf("read observation of %s: %w", f.WorkloadKey(), err)
	}
	return nil
}

// loadTarget fills Siblings and EverHealthy for the record's target or, for
// a task fact that opens one, the fact's. A cluster fact without a record is
// drift, which touches no sibling.
func (s *Store) loadTarget(ctx context.Context, tx *sql.Tx, in *Input) error {
	var app, env, cluster string
	switch {
	case in.Record != nil:
		app, env, cluster = in.Record.App, in.Record.Environment, in.Record.Cluster
	case in.Fact.IsTask():
		app, env, cluster = in.Fact.App, in.Fact.Environment, in.Fact.Cluster
	default:
		return nil
	}
	// The state list repeats records_open's predicate so the index serves
	// it. The few rows are sorted here: an ORDER BY would lead SQLite's
	// planner to walk the target's whole history in records_target order.
	rows, err := tx.QueryContext(ctx, `SELECT `+recordColumns+` FROM records
		WHERE app = $1 AND environment = $2 AND cluster = $3 AND state NOT IN ('superseded', 'rolled-back')
		AND release_id <> $4`, app, env, cluster, in.Fact.ReleaseKey())
	if err != nil {
		return fmt.Errorf("read open releases of %s/%s/%s: %w", app, env, cluster, err)
	}
	if in.Siblings, err = scanRecords(rows); err != nil {
		return fmt.Errorf("read open releases of %s/%s/%s: %w", app, env, cluster, err)
	}
	sortSiblings(in.Siblings)
	healthy := func(r Record) bool { return r.HealthyAt != nil }
	if (in.Record != nil && healthy(*in.Record)) || slices.ContainsFunc(in.Siblings, healthy) {
		in.EverHealthy = true
		return nil
	}
	err = tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM records
		WHERE app = $1 AND environment = $2 AND cluster = $3 AND healthy_at IS NOT NULL)`,
		app, env, cluster).Scan(&in.EverHealthy)
	if err != nil {
		return fmt.Errorf("read whether %s/%s/%s was ever healthy: %w", app, env, cluster, err)
	}
	return nil
}

// save writes a Result as Reduce's doc describes it.
func (s *Store) save(ctx context.Context, tx *sql.Tx, f Fact, res Result, now time.Time, legacy string) error {
	if s.db.Dialect == store.Postgres {
		return s.saveAtOnce(ctx, tx, f, res, now, legacy)
	}
	for i, r := range res.Records {
		var err error
		if i == 0 && res.Outcome == OutcomeOpened {
			err = s.insertRecord(ctx, tx, r)
		} else {
			err = s.updateRecord(ctx, tx, r)
		}
		if err != nil {
			return err
		}
	}
	if o := res.Observation; o != nil {
		body, err := json.Marshal(o)
		if err != nil {
			return fmt.Errorf("save observation of %s: %w", o.Key(), err)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO observations (key, release_id, observed_at, body) VALUES ($1, $2, $3, $4)
			ON CONFLICT (key) DO UPDATE SET release_id = excluded.release_id, observed_at = excluded.observed_at, body = excluded.body`,
			o.Key(), o.ReleaseID, store.Micros(o.ObservedAt), string(body))
		if err != nil {
			return fmt.Errorf("save observation of %s: %w", o.Key(), err)
		}
		if legacy != "" {
			if _, err := tx.ExecContext(ctx, `DELETE FROM observations WHERE key = $1`, legacy); err != nil {
				return fmt.Errorf("replace the observation of %s stored without a source: %w", legacy, err)
			}
		}
	}
	if res.KeepFact {
		f.FactID = res.FactID
		body, err := json.Marshal(f)
		if err != nil {
			return fmt.Errorf("save fact: %w", err)
		}
		// Under the cluster lock the id cannot appear meanwhile; DO NOTHING
		// only keeps a misuse (two calls in one transaction) from failing.
		_, err = tx.ExecContext(ctx, `INSERT INTO facts (id, release_id, source, received_at, body) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (id) DO NOTHING`, res.FactID, f.ReleaseKey(), string(f.Source), store.Micros(now), string(body))
		if err != nil {
			return fmt.Errorf("save fact: %w", err)
		}
	}
	return s.insertAudit(ctx, tx, res.Audit)
}
