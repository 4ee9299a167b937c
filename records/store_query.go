package records

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ripcord/ripcord/internal/store"
)

// DefaultListLimit is how many records List returns when the filter says
// no limit.
const DefaultListLimit = 100

// Filter selects records. Empty fields match everything.
type Filter struct {
	App         string
	Environment string
	Cluster     string
	State       State
	// Limit is the most records returned; 0 means DefaultListLimit.
	Limit int
}

// newestFirst orders records as eligibility counts them; the release id
// breaks ties so that equal created_at values still have one order.
const newestFirst = ` ORDER BY created_at DESC, release_id DESC`

const newestQuery = `SELECT ` + recordColumns + ` FROM records
	WHERE app = $1 AND environment = $2 AND cluster = $3` + newestFirst + ` LIMIT $4`

// List returns the records the filter selects, newest first.
func (s *Store) List(ctx context.Context, f Filter) ([]Record, error) {
	if f.State != "" && !f.State.Valid() {
		return nil, &FieldError{Field: "state", Message: fmt.Sprintf("unknown state %q", f.State)}
	}
	q, args := listQuery(f, s.db.Dialect)
	rows, err := s.db.Read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list releases: %w", err)
	}
	rs, err := scanRecords(rows)
	if err != nil {
		return nil, fmt.Errorf("list releases: %w", err)
	}
	return rs, nil
}

// listQuery is List's statement. A page is read along one index in the
// list's order, so it reads its rows and stops however long the history
// is: a whole target's records_target; else an app's, an environment's or
// a cluster's own (records_app, records_environment, migration 00027;
// records_cluster, 00029); else a state's records_state. The other
// filters are checked on the rows it yields, written as expressions (the
// column joined to an empty string) that no index serves: given two
// indexes SQLite, which plans without statistics, took an environment's
// for an app's environment and walked every app's records of that
// environment. PostgreSQL plans with the statistics of the table and is
// left to choose: an environment's healthy releases, say, are few, and it
// reads them from records_state.
func listQuery(f Filter, dialect store.Dialect) (string, []any) {
	indexed := map[string]bool{}
	switch {
	case dialect != store.SQLite:
		indexed["app"], indexed["environment"], indexed["cluster"], indexed["state"] = true, true, true, true
	case f.App != "" && f.Environment != "" && f.Cluster != "":
		indexed["app"], indexed["environment"], indexed["cluster"] = true, true, true
	case f.App != "":
		indexed["app"] = true
	case f.Environment != "":
		indexed["environment"] = true
	case f.Cluster != "":
		indexed["cluster"] = true
	default:
		indexed["state"] = true
	}
	var where []string
	var args []any
	for _, c := range []struct{ col, v string }{
		{"app", f.App}, {"environment", f.Environment}, {"cluster", f.Cluster}, {"state", string(f.State)},
	} {
		if c.v == "" {
			continue
		}
		args = append(args, c.v)
		col := c.col
		if !indexed[col] {
			col += " || ''"
		}
		where = append(where, fmt.Sprintf("%s = $%d", col, len(args)))
	}
	q := `SELECT ` + recordColumns + ` FROM records`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	args = append(args, limitOr(f.Limit, DefaultListLimit))
	q += newestFirst + fmt.Sprintf(` LIMIT $%d`, len(args))
	return q, args
}

// Newest returns the n newest records of one app, environment and cluster,
// newest first: what an eligibility check reads. The records_target index
// serves it, so its cost does not grow with the store.
func (s *Store) Newest(ctx context.Context, app, env, cluster string, n int) ([]Record, error) {
	if n <= 0 {
		return nil, fmt.Errorf("newest releases of %s/%s/%s: n must be positive, got %d", app, env, cluster, n)
	}
	st, err := s.readStmt(ctx, newestQuery)
	if err != nil {
		return nil, fmt.Errorf("newest releases of %s/%s/%s: %w", app, env, cluster, err)
	}
	rows, err := st.QueryContext(ctx, app, env, cluster, n)
	if err != nil {
		return nil, fmt.Errorf("newest releases of %s/%s/%s: %w", app, env, cluster, err)
	}
	rs, err := scanRecords(rows)
	if err != nil {
		return nil, fmt.Errorf("newest releases of %s/%s/%s: %w", app, env, cluster, err)
	}
	return rs, nil
}

// Target is an app, environment and cluster: where releases run, and what
// eligibility ranks records within.
type Target struct{ App, Environment, Cluster string }

// NewestRan returns, for each of targets, its n newest records that ran
// (Ran: a fact came; opened, withdrawn and failed-before-running ones never
// ran and take no place in an eligibility window), newest first. Unlike the newest records of the whole store, which one
// busy target can fill, this holds each target's window whatever the
// number of records.
func (s *Store) NewestRan(ctx context.Context, n int, targets []Target) ([]Record, error) {
	if n <= 0 {
		return nil, fmt.Errorf("newest releases that ran: n must be positive, got %d", n)
	}
	read := s.newestRanLateral
	if s.db.Dialect == store.SQLite {
		read = s.newestRanEach
	}
	out, err := read(ctx, n, distinct(targets))
	if err != nil {
		return nil, fmt.Errorf("newest releases that ran: %w", err)
	}
	slices.SortStableFunc(out, func(a, b Record) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ReleaseID, a.ReleaseID))
	})
	return out, nil
}

// newestRanEach runs one prepared statement per target (SQLite has no
// LATERAL): in process, running a small statement once per target costs
// less than compiling one statement that reads them all.
func (s *Store) newestRanEach(ctx context.Context, n int, targets []Target) ([]Record, error) {
	st, err := s.readStmt(ctx, newestRanOneQuery)
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, t := range targets {
		rows, err := st.QueryContext(ctx, t.App, t.Environment, t.Cluster, n)
		if err != nil {
			return nil, err
		}
		rs, err := scanRecords(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

// newestRanLateral reads all the targets in one statement on PostgreSQL,
// where a statement per target would cost a round trip each: for each
// target, its newest records that ran along records_target, n of them.
// The text is constant, so the driver's statement cache serves it,
// whatever the number of targets.
func (s *Store) newestRanLateral(ctx context.Context, n int, targets []Target) ([]Record, error) {
	apps, envs, clusters := make([]string, len(targets)), make([]string, len(targets)), make([]string, len(targets))
	for i, t := range targets {
		apps[i], envs[i], clusters[i] = t.App, t.Environment, t.Cluster
	}
	rows, err := s.db.Read.QueryContext(ctx, newestRanLateralQuery, n, apps, envs, clusters)
	if err != nil {
		return nil, err
	}
	return scanRecords(rows)
}

// newestRanOneQuery is one target's n newest records that ran, along
// records_target from its newest record, which stops after n. (Numbering
// the records of the targets with ROW_NUMBER, as NewestRan did before,
// read and sorted every one of them: for the releases page's hundreds of
// targets, most of the table.)
const newestRanOneQuery = `SELECT ` + recordColumns + ` FROM records
	WHERE app = $1 AND environment = $2 AND cluster = $3 AND ` + ranCondition + newestFirst + ` LIMIT $4`

// newestRanLateralQuery is newestRanOneQuery for each of the targets
// given as three arrays.
const newestRanLateralQuery = `SELECT r.* FROM unnest($2::text[], $3::text[], $4::text[]) AS t(app, environment, cluster)
	CROSS JOIN LATERAL (SELECT ` + recordColumns + ` FROM records
		WHERE app = t.app AND environment = t.environment AND cluster = t.cluster AND ` + ranCondition + newestFirst + ` LIMIT $1) r`

// distinct is targets without repeats, in their first order: a target
// asked for twice must not have its records twice.
func distinct(targets []Target) []Target {
	seen := make(map[Target]bool, len(targets))
	out := make([]Target, 0, len(targets))
	for _, t := range targets {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}
