package records

import (
	"context"
	"fmt"
	"strings"
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
	var where []string
	var args []any
	for _, c := range []struct{ col, v string }{
		{"app", f.App}, {"environment", f.Environment}, {"cluster", f.Cluster}, {"state", string(f.State)},
	} {
		if c.v != "" {
			args = append(args, c.v)
			where = append(where, fmt.Sprintf("%s = $%d", c.col, len(args)))
		}
	}
	q := `SELECT ` + recordColumns + ` FROM records`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	args = append(args, limitOr(f.Limit, DefaultListLimit))
	q += newestFirst + fmt.Sprintf(` LIMIT $%d`, len(args))
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
