package records

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ripcord/ripcord/internal/store"
)

// batchWriteQuery writes what a batch decided, in one statement of
// data-modifying CTEs fed by arrays, so that its text is constant
// whatever the batch holds: the kept facts ($1–$5; none is stored yet,
// as the read under the lock showed, so a conflict is an error), the last
// observation of each workload ($6–$9), the records the batch opened, in
// their final state ($10–$30), the records it changed ($31–$47), and the
// audit events in the order the facts wrote them ($48–$54; identities
// follow that order, as Audit's order by (at, id) expects). It returns
// how many records were inserted and, as a JSON array, which updated.
var batchWriteQuery = `WITH kept AS (INSERT INTO facts (id, release_id, source, received_at, body)
	SELECT id, release_id, source, received_at, body::jsonb
	FROM ` + unnestAs(1, "id text, release_id text, source text, received_at bigint, body text") + `),
seen AS (INSERT INTO observations (key, release_id, observed_at, body)
	SELECT key, release_id, observed_at, body::jsonb
	FROM ` + unnestAs(6, "key text, release_id text, observed_at bigint, body text") + `
	ON CONFLICT (key) DO UPDATE SET release_id = excluded.release_id, observed_at = excluded.observed_at, body = excluded.body),
opened AS (INSERT INTO records (` + recordColumns + `)
	SELECT * FROM ` + unnestAs(10, recordColumnTypes) + ` RETURNING 1),
changed AS (UPDATE records r SET ` + updateFromU() + `
	FROM ` + unnestAs(31, "release_id text, "+updateColumnTypes) + ` WHERE r.release_id = u.release_id RETURNING r.release_id),
events AS (INSERT INTO audit_events (` + auditColumns + `)
	SELECT type, release_id, delivery_id, fact_id, at, message, data::jsonb
	FROM ` + unnestAs(48, "type text, release_id text, delivery_id text, fact_id text, at bigint, message text, data text", "WITH ORDINALITY", "n") + `
	ORDER BY n)
SELECT (SELECT count(*) FROM opened), (SELECT coalesce(json_agg(release_id), '[]') FROM changed)::text`

// recordColumnTypes are recordColumns with their types.
const recordColumnTypes = `release_id text, app text, environment text, cluster text, repository text, kind text,
	rollback_of text, rollback_reason text, image text, digest text, git_revision text, config_revision text,
	pr_url text, pr_number bigint, flow_started_at bigint, state text, healthy_at bigint, rolled_back_by text,
	last_fact_at bigint, created_at bigint, updated_at bigint`

// updateColumnTypes are updateColumns with their types.
const updateColumnTypes = `repository text, kind text, rollback_of text, rollback_reason text, image text, digest text,
	git_revision text, config_revision text, pr_url text, pr_number bigint, flow_started_at bigint, state text,
	healthy_at bigint, rolled_back_by text, last_fact_at bigint, updated_at bigint`

// unnestAs is "unnest($first::t1[], …) [with] AS u(c1, …[, extra])" for
// the typed columns cols ("name type, …").
func unnestAs(first int, cols string, with ...string) string {
	var arrays, names []string
	for i, c := range strings.Split(cols, ",") {
		name, typ, _ := strings.Cut(strings.TrimSpace(c), " ")
		arrays = append(arrays, fmt.Sprintf("$%d::%s[]", first+i, typ))
		names = append(names, name)
	}
	var w string
	if len(with) > 0 {
		w, names = " "+with[0], append(names, with[1:]...)
	}
	return "unnest(" + strings.Join(arrays, ", ") + ")" + w + " AS u(" + strings.Join(names, ", ") + ")"
}

func updateFromU() string {
	set := make([]string, len(updateColumns))
	for i, c := range updateColumns {
		set[i] = c + " = u." + c
	}
	return strings.Join(set, ", ")
}

// writeBatch runs batchWriteQuery for what the overlay owes and checks
// that every record it opened was inserted and every other one updated.
func (s *Store) writeBatch(ctx context.Context, tx *sql.Tx, o *batchOverlay) error {
	if len(o.kept)+len(o.obsOrder)+len(o.recOrder)+len(o.audit) == 0 {
		return nil // duplicates only
	}
	args, updated, err := batchWriteArgs(o)
	if err != nil {
		return err
	}
	var nInserted int
	var touched []byte
	if err := tx.QueryRowContext(ctx, batchWriteQuery, args...).Scan(&nInserted, &touched); err != nil {
		return fmt.Errorf("save %d facts, %d releases, %d audit events: %w", len(o.kept), len(o.recOrder), len(o.audit), err)
	}
	if opened := len(o.recOrder) - len(updated); nInserted != opened {
		return fmt.Errorf("insert releases: %d of %d inserted", nInserted, opened)
	}
	var found []string
	if err := json.Unmarshal(touched, &found); err != nil {
		return fmt.Errorf("read which releases were updated: %w", err)
	}
	for _, id := range updated {
		if !slices.Contains(found, id) {
			return fmt.Errorf("update release %s: %w", id, ErrNotFound)
		}
	}
	return nil
}

// batchWriteArgs are batchWriteQuery's arguments for what the overlay
// owes, and the release ids it updates.
func batchWriteArgs(o *batchOverlay) (args []any, updated []string, err error) {
	var facts [5][]string
	var received []int64
	for _, k := range o.kept {
		facts[0], facts[1], facts[2], facts[4] = append(facts[0], k.id), append(facts[1], k.releaseID), append(facts[2], k.source), append(facts[4], k.body)
		received = append(received, k.receivedAt)
	}
	var obsKeys, obsReleases, obsBodies []string
	var obsAt []int64
	for _, key := range o.obsOrder {
		obs := o.obs[key]
		body, err := json.Marshal(obs)
		if err != nil {
			return nil, nil, fmt.Errorf("save observation of %s: %w", key, err)
		}
		obsKeys, obsReleases, obsBodies = append(obsKeys, key), append(obsReleases, obs.ReleaseID), append(obsBodies, string(body))
		obsAt = append(obsAt, store.Micros(obs.ObservedAt))
	}
	var inserts, updates recordArrays
	for _, id := range o.recOrder {
		if o.opened[id] {
			inserts.add(o.recs[id])
		} else {
			updates.add(o.recs[id])
			updated = append(updated, id)
		}
	}
	events, err := auditArrays(o.audit)
	if err != nil {
		return nil, nil, err
	}
	args = []any{facts[0], facts[1], facts[2], received, facts[4], obsKeys, obsReleases, obsAt, obsBodies}
	args = append(append(append(args, inserts.insertArgs()...), updates.updateArgs()...), events...)
	return args, updated, nil
}

// recordArrays are records as one array per column.
type recordArrays struct {
	text               [13][]string // release_id … pr_url, in recordColumns order
	prNumber           []int64
	flow, healthy      []*int64
	state, rolledBack  []string
	lastFact           []*int64
	createdAt, updated []int64
}

func (a *recordArrays) add(r Record) {
	for i, v := range []string{r.ReleaseID, r.App, r.Environment, r.Cluster, r.Repository, string(r.Kind), r.RollbackOf,
		r.RollbackReason, r.Image, r.Digest, r.GitRevision, r.ConfigRevision, r.PRURL} {
		a.text[i] = append(a.text[i], v)
	}
	a.prNumber = append(a.prNumber, int64(r.PRNumber))
	a.flow = append(a.flow, micros(r.FlowStartedAt))
	a.state = append(a.state, string(r.State))
	a.healthy = append(a.healthy, micros(r.HealthyAt))
	a.rolledBack = append(a.rolledBack, r.RolledBackBy)
	a.lastFact = append(a.lastFact, micros(r.LastFactAt))
	a.createdAt = append(a.createdAt, store.Micros(r.CreatedAt))
	a.updated = append(a.updated, store.Micros(r.UpdatedAt))
}

// insertArgs are the arrays in recordColumns order.
func (a *recordArrays) insertArgs() []any {
	args := make([]any, 0, recordParams)
	for _, col := range a.text {
		args = append(args, col)
	}
	return append(args, a.prNumber, a.flow, a.state, a.healthy, a.rolledBack, a.lastFact, a.createdAt, a.updated)
}

// updateArgs are release_id, then the arrays in updateColumns order.
func (a *recordArrays) updateArgs() []any {
	args := []any{a.text[0]}
	for _, col := range a.text[4:] {
		args = append(args, col)
	}
	return append(args, a.prNumber, a.flow, a.state, a.healthy, a.rolledBack, a.lastFact, a.updated)
}

// micros is a nullable time as the database stores it.
func micros(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	us := store.Micros(*t)
	return &us
}

// auditArrays are events as one array per auditColumns column, checked
// as InsertAudit checks them.
func auditArrays(events []AuditEvent) ([]any, error) {
	var types, releases, deliveries, factIDs, messages []string
	var ats []int64
	var data []*string
	for i, e := range events {
		a, err := auditArgs(e)
		if err != nil {
			return nil, fmt.Errorf("audit event %d: %w", i, err)
		}
		types, releases, deliveries = append(types, string(e.Type)), append(releases, e.ReleaseID), append(deliveries, e.DeliveryID)
		factIDs, ats, messages = append(factIDs, e.FactID), append(ats, store.Micros(e.At)), append(messages, e.Message)
		var d *string // NULL when there is nothing to say
		if s, ok := a[auditParams-1].(string); ok {
			d = &s
		}
		data = append(data, d)
	}
	return []any{types, releases, deliveries, factIDs, ats, messages, data}, nil
}
