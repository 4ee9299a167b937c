package records

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ripcord/ripcord/internal/store"
)

// On PostgreSQL a fact's cost is its round trips, so ApplyFact reads what
// Reduce needs in two statements after the lock (the duplicate check
// first: a duplicate, often the most common fact, reads no further), and
// saves what it decided in one statement of data-modifying CTEs. Reads after the lock are right
// because each statement in READ COMMITTED takes a fresh snapshot. SQLite
// runs in-process, where a statement costs no round trip; it keeps the
// step-by-step reads and writes, which the tests hold to the same results.

// loadRecordQuery returns, as rows told apart by their first column,
// whether the target was ever healthy (part 0, with a blank record), the
// record (part 1) and its open siblings (part 2). The target is the
// record's or, for a task fact without one, the fact's.
var loadRecordQuery = `WITH rec AS (SELECT ` + recordColumns + ` FROM records WHERE release_id = $1),
tgt AS (SELECT app, environment, cluster FROM rec
	UNION ALL SELECT $2::text, $3::text, $4::text WHERE $5::boolean AND NOT EXISTS (SELECT 1 FROM rec))
SELECT 0, EXISTS (SELECT 1 FROM records r JOIN tgt USING (app, environment, cluster) WHERE r.healthy_at IS NOT NULL),
	'', '', '', '', '', '', '', '', '', '', '', '', '', 0, NULL, '', NULL, '', NULL, 0, 0
UNION ALL SELECT 1, false, rec.* FROM rec
UNION ALL SELECT 2, false, ` + siblingColumns + ` FROM records r JOIN tgt USING (app, environment, cluster)
	WHERE r.state NOT IN ('superseded', 'rolled-back') AND r.release_id <> $1`

// siblingColumns are recordColumns of the records aliased r.
var siblingColumns = "r." + strings.Join(strings.Split(strings.Join(strings.Fields(recordColumns), " "), ", "), ", r.")

// loadRecordAtOnce reads in.Record, Siblings and EverHealthy in one
// statement. ok is false when the record belongs to a cluster not in
// locked: the caller locks it and reads again.
func (s *Store) loadRecordAtOnce(ctx context.Context, tx *sql.Tx, in *Input, locked []string) (ok bool, err error) {
	f := in.Fact
	rows, err := tx.QueryContext(ctx, loadRecordQuery, f.ReleaseKey(), f.App, f.Environment, f.Cluster, f.IsTask())
	if err != nil {
		return false, fmt.Errorf("read release %s and its target: %w", f.ReleaseKey(), err)
	}
	defer rows.Close()
	for rows.Next() {
		var part int
		var ever bool
		r, err := scanRecord(prefixed{rows, []any{&part, &ever}})
		if err != nil {
			return false, fmt.Errorf("read release %s and its target: %w", f.ReleaseKey(), err)
		}
		switch part {
		case 0:
			in.EverHealthy = ever
		case 1:
			in.Record = &r
		default:
			in.Siblings = append(in.Siblings, r)
		}
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("read release %s and its target: %w", f.ReleaseKey(), err)
	}
	if in.Record != nil && !slices.Contains(locked, in.Record.Cluster) {
		return false, nil
	}
	sortSiblings(in.Siblings)
	return true, nil
}

func sortSiblings(sibs []Record) {
	slices.SortFunc(sibs, func(a, b Record) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ReleaseID, b.ReleaseID))
	})
}

// prefixed scans leading columns into prefix, then the rest into dest.
type prefixed struct {
	rows   *sql.Rows
	prefix []any
}

func (p prefixed) Scan(dest ...any) error { return p.rows.Scan(append(p.prefix, dest...)...) }

// updateColumns are the columns updateRecord sets, in updateArgs' order
// after the release id.
var updateColumns = []string{"repository", "kind", "rollback_of", "rollback_reason", "image", "digest",
	"git_revision", "config_revision", "pr_url", "pr_number", "flow_started_at", "state", "healthy_at",
	"rolled_back_by", "last_fact_at", "updated_at"}

// updateSQL is updateRecord's statement with parameters from first on.
func updateSQL(first int) string {
	set := make([]string, len(updateColumns))
	for i, c := range updateColumns {
		set[i] = fmt.Sprintf("%s = $%d", c, first+1+i)
	}
	return fmt.Sprintf("UPDATE records SET %s WHERE release_id = $%d", strings.Join(set, ", "), first)
}

func updateArgs(r Record) []any {
	return []any{r.ReleaseID, r.Repository, string(r.Kind), r.RollbackOf, r.RollbackReason,
		r.Image, r.Digest, r.GitRevision, r.ConfigRevision, r.PRURL, r.PRNumber,
		store.NullMicros(r.FlowStartedAt), string(r.State), store.NullMicros(r.HealthyAt), r.RolledBackBy,
		store.NullMicros(r.LastFactAt), store.Micros(r.UpdatedAt)}
}

// saveAtOnce is save in one statement: a data-modifying CTE per write,
// and a final SELECT of how many rows each record's write touched.
func (s *Store) saveAtOnce(ctx context.Context, tx *sql.Tx, f Fact, res Result, now time.Time, legacy string) error {
	var ctes, counts []string
	var args []any
	// add appends a write whose SQL write builds from the number of its
	// first parameter, and returns the write's name.
	add := func(write func(first int) string, a ...any) string {
		name := fmt.Sprintf("w%d", len(ctes))
		ctes = append(ctes, name+" AS ("+write(len(args)+1)+" RETURNING 1)")
		args = append(args, a...)
		return name
	}
	values := func(n int) func(int) string {
		return func(first int) string { return "VALUES (" + placeholders(first, n) + ")" }
	}
	for i, r := range res.Records {
		if i == 0 && res.Outcome == OutcomeOpened {
			insert := values(recordParams)
			counts = append(counts, add(func(first int) string {
				return `INSERT INTO records (` + recordColumns + `) ` + insert(first)
			}, recordArgs(r)...))
			continue
		}
		counts = append(counts, add(updateSQL, updateArgs(r)...))
	}
	if o := res.Observation; o != nil {
		body, err := json.Marshal(o)
		if err != nil {
			return fmt.Errorf("save observation of %s: %w", o.Key(), err)
		}
		v := values(4)
		add(func(first int) string {
			return `INSERT INTO observations (key, release_id, observed_at, body) ` + v(first) +
				` ON CONFLICT (key) DO UPDATE SET release_id = excluded.release_id, observed_at = excluded.observed_at, body = excluded.body`
		}, o.Key(), o.ReleaseID, store.Micros(o.ObservedAt), string(body))
		if legacy != "" {
			add(func(first int) string { return fmt.Sprintf(`DELETE FROM observations WHERE key = $%d`, first) }, legacy)
		}
	}
	if res.KeepFact {
		f.FactID = res.FactID
		body, err := json.Marshal(f)
		if err != nil {
			return fmt.Errorf("save fact: %w", err)
		}
		v := values(5)
		add(func(first int) string {
			return `INSERT INTO facts (id, release_id, source, received_at, body) ` + v(first) + ` ON CONFLICT (id) DO NOTHING`
		}, res.FactID, f.ReleaseKey(), string(f.Source), store.Micros(now), string(body))
	}
	if len(res.Audit) > 0 {
		a, err := auditsArgs(res.Audit)
		if err != nil {
			return err
		}
		add(func(first int) string { return auditInsertSQL(first, len(res.Audit)) }, a...)
	}
	if len(ctes) == 0 {
		return nil
	}
	return s.execAtOnce(ctx, tx, res, ctes, counts, args)
}

func auditsArgs(events []AuditEvent) ([]any, error) {
	var args []any
	for i, e := range events {
		a, err := auditArgs(e)
		if err != nil {
			return nil, fmt.Errorf("audit event %d: %w", i, err)
		}
		args = append(args, a...)
	}
	return args, nil
}

// auditInsertSQL inserts n audit events, parameters from first on.
func auditInsertSQL(first, n int) string {
	rows := make([]string, n)
	for i := range rows {
		rows[i] = "(" + placeholders(first+i*auditParams, auditParams) + ")"
	}
	return `INSERT INTO audit_events (` + auditColumns + `) VALUES ` + strings.Join(rows, ", ")
}

func (s *Store) execAtOnce(ctx context.Context, tx *sql.Tx, res Result, ctes, counts []string, args []any) error {
	sel := "1"
	if len(counts) > 0 {
		sel = "(SELECT count(*) FROM " + strings.Join(counts, "), (SELECT count(*) FROM ") + ")"
	}
	rows, err := tx.QueryContext(ctx, "WITH "+strings.Join(ctes, ",\n")+"\nSELECT "+sel, args...)
	if err != nil {
		return fmt.Errorf("save fact %s: %w", res.FactID, err)
	}
	defer rows.Close()
	touched := make([]int64, max(len(counts), 1))
	dest := make([]any, len(touched))
	for i := range touched {
		dest[i] = &touched[i]
	}
	if !rows.Next() {
		return fmt.Errorf("save fact %s: %w", res.FactID, cmp.Or(rows.Err(), sql.ErrNoRows))
	}
	if err := rows.Scan(dest...); err != nil {
		return fmt.Errorf("save fact %s: %w", res.FactID, err)
	}
	for i := range counts {
		if touched[i] != 1 {
			return fmt.Errorf("update release %s: %w", res.Records[i].ReleaseID, ErrNotFound)
		}
	}
	return rows.Close()
}
