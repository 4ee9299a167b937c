package records

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ripcord/ripcord/internal/store"
)

// ErrNotFound: no record has the release id asked for.
var ErrNotFound = errors.New("release not found")

// ErrConflict: a release id was opened again with different content.
// The error is a *ConflictError naming the field.
var ErrConflict = errors.New("release exists with different content")

// ConflictError says which field of an existing release differs from the
// one sent again, so the API can answer 409 naming it.
type ConflictError struct {
	ReleaseID string
	Field     string
	Stored    string
	Sent      string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s: release %s exists with %q, this request sends %q", e.Field, e.ReleaseID, e.Stored, e.Sent)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// Store keeps records, facts, workload observations and audit events in
// ripcord's database. Writes run in the caller's transaction, so that the
// caller can enqueue the effects as jobs in the same commit; reads use the
// read pool.
//
// On PostgreSQL several replicas write at once. Every write that reads
// records to decide (ApplyFact, OpenRelease, MarkStalled) first takes a
// transaction-scoped advisory lock per cluster, so two facts about one
// app, environment and cluster are reduced one after the other and neither
// decides on a state the other is changing. The transaction must be READ
// COMMITTED (the default), so reads after the lock see the previous
// holder's commit. SQLite has one writer connection and needs no lock.
type Store struct {
	db *store.DB

	mu       sync.Mutex
	prepared map[string]*sql.Stmt
}

// NewStore returns a store over an open, migrated database.
func NewStore(db *store.DB) *Store { return &Store{db: db, prepared: map[string]*sql.Stmt{}} }

// readStmt returns query prepared on the read pool. The hot reads
// (eligibility's Newest, Get) use it: SQLite spends most of a small query
// compiling it, and a prepared statement does that once per connection.
func (s *Store) readStmt(ctx context.Context, query string) (*sql.Stmt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.prepared[query]; ok {
		return st, nil
	}
	st, err := s.db.Read.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s.prepared[query] = st
	return st, nil
}

// clusterLockClass namespaces the store's advisory locks ("reco"); the
// two-key form never collides with the one-key migration lock.
const clusterLockClass = 0x7265636f

// LockClusters takes the locks ApplyFact takes for the given clusters until
// tx ends, and returns a context under which ApplyFact in tx knows they are
// held and spends no statement on them. A caller applying facts of several
// clusters in one transaction takes them all first, in one go: the store's
// lock order then holds for the whole transaction.
func (s *Store) LockClusters(ctx context.Context, tx *sql.Tx, clusters ...string) (context.Context, error) {
	if err := s.lockClusters(ctx, tx, clusters...); err != nil {
		return ctx, err
	}
	h := &heldLocks{tx: tx, keys: map[int32]bool{}}
	if prev, ok := ctx.Value(heldLocksKey{}).(*heldLocks); ok && prev.tx == tx {
		maps.Copy(h.keys, prev.keys)
	}
	for _, c := range clusters {
		h.keys[clusterKey(c)] = true
	}
	return context.WithValue(ctx, heldLocksKey{}, h), nil
}

// heldLocks are the cluster locks LockClusters took in tx.
type heldLocks struct {
	tx   *sql.Tx
	keys map[int32]bool
}

type heldLocksKey struct{}

// lockClusters serialises writers of the given clusters until tx ends. Keys
// are taken in a fixed order, in one statement, so two writers needing the
// same clusters cannot deadlock: unnest yields the keys in array order and
// the locks are taken row by row in that order. Keys that LockClusters
// took in tx (see ctx) are held already.
func (s *Store) lockClusters(ctx context.Context, tx *sql.Tx, clusters ...string) error {
	if s.db.Dialect != store.Postgres || len(clusters) == 0 {
		return nil
	}
	held, _ := ctx.Value(heldLocksKey{}).(*heldLocks)
	keys := make([]int32, 0, len(clusters))
	for _, c := range clusters {
		if k := clusterKey(c); held == nil || held.tx != tx || !held.keys[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	var err error
	switch len(keys) {
	case 0:
		return nil
	case 1:
		_, err = tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, clusterLockClass, keys[0])
	default:
		list := make([]string, len(keys))
		for i, k := range keys {
			list[i] = strconv.Itoa(int(k))
		}
		_, err = tx.ExecContext(ctx, `SELECT count(pg_advisory_xact_lock($1, k)) FROM unnest($2::int4[]) AS k`,
			clusterLockClass, "{"+strings.Join(list, ",")+"}")
	}
	if err != nil {
		return fmt.Errorf("lock cluster: %w", err)
	}
	return nil
}

func clusterKey(cluster string) int32 {
	h := fnv.New32a()
	h.Write([]byte(cluster))
	return int32(h.Sum32())
}

// recordColumns are the columns of Record, in scanRecord's order.
const recordColumns = `release_id, app, environment, cluster, repository, kind, rollback_of, rollback_reason,
	image, digest, git_revision, config_revision, pr_url, pr_number, flow_started_at, state,
	healthy_at, rolled_back_by, last_fact_at, created_at, updated_at`

// recordParams is the number of recordColumns.
const recordParams = 21

// recordArgs are a record's values in recordColumns order.
func recordArgs(r Record) []any {
	return []any{r.ReleaseID, r.App, r.Environment, r.Cluster, r.Repository, string(r.Kind), r.RollbackOf, r.RollbackReason,
		r.Image, r.Digest, r.GitRevision, r.ConfigRevision, r.PRURL, r.PRNumber, store.NullMicros(r.FlowStartedAt), string(r.State),
		store.NullMicros(r.HealthyAt), r.RolledBackBy, store.NullMicros(r.LastFactAt), store.Micros(r.CreatedAt), store.Micros(r.UpdatedAt)}
}

type scanner interface{ Scan(dest ...any) error }

func scanRecord(row scanner) (Record, error) {
	var r Record
	var kind, state string
	var flow, healthy, lastFact *int64
	var created, updated int64
	err := row.Scan(&r.ReleaseID, &r.App, &r.Environment, &r.Cluster, &r.Repository, &kind, &r.RollbackOf, &r.RollbackReason,
		&r.Image, &r.Digest, &r.GitRevision, &r.ConfigRevision, &r.PRURL, &r.PRNumber, &flow, &state,
		&healthy, &r.RolledBackBy, &lastFact, &created, &updated)
	if err != nil {
		return Record{}, err
	}
	r.Kind, r.State = Kind(kind), State(state)
	r.FlowStartedAt, r.HealthyAt, r.LastFactAt = store.TimePtr(flow), store.TimePtr(healthy), store.TimePtr(lastFact)
	r.CreatedAt, r.UpdatedAt = store.Time(created), store.Time(updated)
	return r, nil
}

func scanRecords(rows *sql.Rows) ([]Record, error) {
	defer rows.Close()
	var out []Record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

const getRecordQuery = `SELECT ` + recordColumns + ` FROM records WHERE release_id = $1`

// getRecord reads one record in a transaction; nil when there is none.
func (s *Store) getRecord(ctx context.Context, tx *sql.Tx, releaseID string) (*Record, error) {
	r, err := scanRecord(tx.QueryRowContext(ctx, getRecordQuery, releaseID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read release %s: %w", releaseID, err)
	}
	return &r, nil
}

// Get returns the record of a release, or an error wrapping ErrNotFound.
func (s *Store) Get(ctx context.Context, releaseID string) (Record, error) {
	st, err := s.readStmt(ctx, getRecordQuery)
	if err != nil {
		return Record{}, fmt.Errorf("read release %s: %w", releaseID, err)
	}
	r, err := scanRecord(st.QueryRowContext(ctx, releaseID))
	if errors.Is(err, sql.ErrNoRows) {
		return Record{}, fmt.Errorf("release %s: %w", releaseID, ErrNotFound)
	}
	if err != nil {
		return Record{}, fmt.Errorf("read release %s: %w", releaseID, err)
	}
	return r, nil
}

func (s *Store) insertRecord(ctx context.Context, tx *sql.Tx, r Record) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO records (`+recordColumns+`) VALUES (`+placeholders(1, recordParams)+`)`, recordArgs(r)...)
	if err != nil {
		return fmt.Errorf("insert release %s: %w", r.ReleaseID, err)
	}
	return nil
}

// updateRecord saves every field the record has; the target (app,
// environment, cluster) and created_at never change, so they stay out.
func (s *Store) updateRecord(ctx context.Context, tx *sql.Tx, r Record) error {
	res, err := tx.ExecContext(ctx, `UPDATE records SET repository = $2, kind = $3, rollback_of = $4, rollback_reason = $5,
		image = $6, digest = $7, git_revision = $8, config_revision = $9, pr_url = $10, pr_number = $11,
		flow_started_at = $12, state = $13, healthy_at = $14, rolled_back_by = $15, last_fact_at = $16, updated_at = $17
		WHERE release_id = $1`,
		r.ReleaseID, r.Repository, string(r.Kind), r.RollbackOf, r.RollbackReason,
		r.Image, r.Digest, r.GitRevision, r.ConfigRevision, r.PRURL, r.PRNumber,
		store.NullMicros(r.FlowStartedAt), string(r.State), store.NullMicros(r.HealthyAt), r.RolledBackBy,
		store.NullMicros(r.LastFactAt), store.Micros(r.UpdatedAt))
	if err != nil {
		return fmt.Errorf("update release %s: %w", r.ReleaseID, err)
	}
	if n, err := res.RowsAffected(); err == nil && n != 1 {
		return fmt.Errorf("update release %s: %w", r.ReleaseID, ErrNotFound)
	}
	return nil
}

// placeholders returns "$from, …, $(from+n-1)".
func placeholders(from, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "$%d", from+i)
	}
	return b.String()
}

// storedTime is t as the database gives it back: UTC, to the microsecond.
// Reducing with stored precision keeps the Result equal to what Get reads.
func storedTime(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return store.Time(store.Micros(t))
}
