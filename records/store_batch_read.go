package records

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
)

// batchReadQuery reads, for all the facts of a batch at once, the rows
// ApplyFact reads for each. The facts come as aligned arrays: fact id
// ($1), workload key ($2, empty for a task fact), release key ($3), and
// for task facts their app, environment and cluster ($4–$6, empty for
// the others), and the workload's legacy key ($7, empty for a task fact).
// The one row of part 3 holds, as JSON, the fact ids already stored and
// the observations of the facts' workloads by key, under either key:
// nothing else is read for a duplicate, as ApplyFact reads nothing else
// for a repeat (a duplicate that is no repeat leaves the batch to
// ApplyFact). For the other facts: the records of their release keys (part 0),
// the other open records of those records' targets and of the task
// facts' targets (part 1), and one healthy record of each such target
// where none of those is healthy (part 2, for EverHealthy). Rows are told
// apart by the first column; the other columns pad. The text is constant,
// so the driver's statement cache serves it.
var batchReadQuery = `WITH f AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
	AS f(id, workload, release_id, app, environment, cluster, legacy)),
dup AS (SELECT id FROM facts WHERE id IN (SELECT id FROM f)),
todo AS (SELECT * FROM f WHERE id NOT IN (SELECT id FROM dup)),
rec AS (SELECT ` + recordColumns + ` FROM records WHERE release_id IN (SELECT release_id FROM todo WHERE release_id <> '')),
tgt AS (SELECT app, environment, cluster FROM rec
	UNION SELECT app, environment, cluster FROM todo WHERE workload = ''),
sib AS (SELECT ` + siblingColumns + ` FROM records r JOIN tgt USING (app, environment, cluster)
	WHERE r.state NOT IN ('superseded', 'rolled-back') AND r.release_id NOT IN (SELECT release_id FROM rec)),
known AS (SELECT app, environment, cluster FROM rec WHERE healthy_at IS NOT NULL
	UNION SELECT app, environment, cluster FROM sib WHERE healthy_at IS NOT NULL)
SELECT 0, '', NULL, rec.* FROM rec
UNION ALL SELECT 1, '', NULL, sib.* FROM sib
UNION ALL SELECT 2, '', NULL, h.* FROM (SELECT * FROM tgt EXCEPT SELECT * FROM known) t
	CROSS JOIN LATERAL (SELECT ` + siblingColumns + ` FROM records r WHERE r.app = t.app AND r.environment = t.environment
		AND r.cluster = t.cluster AND r.healthy_at IS NOT NULL LIMIT 1) h
UNION ALL SELECT 3, (SELECT coalesce(json_agg(id), '[]') FROM dup)::text,
	(SELECT coalesce(json_object_agg(key, body), '{}') FROM observations WHERE key IN (SELECT workload FROM f WHERE workload <> ''
		UNION SELECT legacy FROM f WHERE legacy <> ''))::text,
	` + blankRecord

// batchLockQuery takes the cluster locks of a batch ($2, sorted: see
// lockClusters) and sets how PostgreSQL plans statements for the rest of
// the transaction: once per connection, and through the indexes. The
// batch's statements are as costly to plan as to run, and their plans
// hardly depend on the arrays passed, yet by default PostgreSQL plans
// each execution anew; a plan made once while a table is small, though,
// would scan it whole ever after, however large it grew, where the
// records, facts and observations of a batch are always reached through
// an index. The statements that follow in the transaction (job inserts,
// or ApplyFact's when the batch falls back) are index lookups and inserts
// that these settings do not hurt.
const batchLockQuery = `SELECT (SELECT count(pg_advisory_xact_lock($1, k)) FROM unnest($2::int4[]) AS k),
	set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_seqscan', 'off', true)`

// blankRecord pads the record columns of rows that carry no record.
const blankRecord = `'', '', '', '', '', '', '', '', '', '', '', '', '', 0, NULL, '', NULL, '', NULL, 0, 0`

// lockForBatch runs batchLockQuery for the keys of clusters that
// LockClusters did not take in tx already.
func (s *Store) lockForBatch(ctx context.Context, tx *sql.Tx, clusters []string) error {
	held, _ := ctx.Value(heldLocksKey{}).(*heldLocks)
	var keys []int32
	for _, c := range clusters {
		if k := clusterKey(c); held == nil || held.tx != tx || !held.keys[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if _, err := tx.ExecContext(ctx, batchLockQuery, clusterLockClass, slices.Compact(keys)); err != nil {
		return fmt.Errorf("lock clusters: %w", err)
	}
	return nil
}

// readBatch runs batchReadQuery for facts and returns the overlay it
// starts from.
func (s *Store) readBatch(ctx context.Context, tx *sql.Tx, facts []BatchFact) (*batchOverlay, error) {
	cols := make([][]string, 7)
	for i := range cols {
		cols[i] = make([]string, len(facts))
	}
	ids, workloads, releases, apps, envs, clusters, legacy := cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6]
	for i, bf := range facts {
		f := bf.Fact
		ids[i], workloads[i], releases[i], legacy[i] = f.ID(), f.WorkloadKey(), f.ReleaseKey(), f.legacyKey()
		if f.IsTask() {
			apps[i], envs[i], clusters[i] = f.App, f.Environment, f.Cluster
		}
	}
	rows, err := tx.QueryContext(ctx, batchReadQuery, ids, workloads, releases, apps, envs, clusters, legacy)
	if err != nil {
		return nil, fmt.Errorf("read %d facts' releases, workloads and ids: %w", len(facts), err)
	}
	defer rows.Close()
	ov := newBatchOverlay()
	for rows.Next() {
		if err := ov.scanRow(rows); err != nil {
			return nil, fmt.Errorf("read %d facts' releases, workloads and ids: %w", len(facts), err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read %d facts' releases, workloads and ids: %w", len(facts), err)
	}
	// The open releases of a task fact's target were read unless the
	// fact is a duplicate.
	for i, bf := range facts {
		if f := bf.Fact; f.IsTask() && !ov.seen[ids[i]] {
			ov.targets[targetKey{f.App, f.Environment, f.Cluster}] = true
		}
	}
	return ov, nil
}

// scanRow adds one row of batchReadQuery to the overlay.
func (o *batchOverlay) scanRow(rows *sql.Rows) error {
	var part int
	var dups, observations []byte
	r, err := scanRecord(prefixed{rows, []any{&part, &dups, &observations}})
	if err != nil {
		return err
	}
	switch part {
	case 0, 1:
		o.recs[r.ReleaseID] = r
		o.targets[targetOf(r)] = true
	case 2:
		o.healthy[targetOf(r)] = true
	default:
		var ids []string
		if err := json.Unmarshal(dups, &ids); err != nil {
			return fmt.Errorf("read stored fact ids: %w", err)
		}
		for _, id := range ids {
			o.seen[id] = true
		}
		if err := json.Unmarshal(observations, &o.obs); err != nil {
			return fmt.Errorf("read observations: %w", err)
		}
	}
	return nil
}
