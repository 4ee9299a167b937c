package rolloutflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/internal/store"
)

// ErrNotFound is a rollout id or release id that names no rollout.
var ErrNotFound = errors.New("no such rollout")

// errMoved is a save that lost to another tick of the same rollout: the
// job is retried and starts again from what the other stored.
var errMoved = errors.New("the rollout moved on meanwhile")

// querier is a *sql.DB or a *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Rollout is one row of rollouts.
type Rollout struct {
	ID             string
	ReleaseID      string
	Repository     string
	InstallationID int64
	App            string
	Environment    string
	Version        string
	Previous       string // the version rollbacks dispatch; "" when there is none
	Author         string
	HeadSHA        string
	Snapshot       Snapshot
	Machine        Machine
	AbortBy        string
	AbortReason    string
	Hold           string // why the rollout may not start on its own (Inputs.Hold)
	WakeAt         time.Time
	CheckRunID     int64
	Seq            int64
	CreatedAt      time.Time
	UpdatedAt      time.Time
	// leavesQueue: the move being stored takes the rollout out of the
	// queue (Tick sets it); commit checks the queue again (stillFirst).
	leavesQueue bool
	// limitedUntil: GitHub's rate limit holds the rollout's run polls
	// until then (Tick sets it); settle polls then, not before.
	limitedUntil time.Time
}

const rolloutColumns = `id, release_id, repository, installation_id, app, environment, version, previous, author,
	head_sha, snapshot, machine, abort_by, abort_reason, hold, wake_at, check_run_id, seq, created_at, updated_at`

// insertRollout stores r unless its release has a rollout already; it
// reports whether r was stored.
func insertRollout(ctx context.Context, tx *sql.Tx, r Rollout) (bool, error) {
	snap, err := json.Marshal(r.Snapshot)
	if err != nil {
		return false, fmt.Errorf("encode plan of rollout %s: %w", r.ID, err)
	}
	m, err := json.Marshal(r.Machine)
	if err != nil {
		return false, fmt.Errorf("encode state of rollout %s: %w", r.ID, err)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO rollouts (`+rolloutColumns+`, status, phase)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, '', '', '', 0, 0, 0, $13, $13, $14, $15)
		ON CONFLICT (release_id) DO NOTHING`,
		r.ID, r.ReleaseID, r.Repository, r.InstallationID, r.App, r.Environment, r.Version, r.Previous, r.Author,
		r.HeadSHA, string(snap), string(m), store.Micros(r.CreatedAt), string(r.Machine.Status), string(r.Machine.Phase))
	if err != nil {
		return false, fmt.Errorf("store rollout of release %s: %w", r.ReleaseID, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func scanRollout(row interface{ Scan(...any) error }) (Rollout, error) {
	var r Rollout
	var snap, m string
	var wake, created, updated int64
	err := row.Scan(&r.ID, &r.ReleaseID, &r.Repository, &r.InstallationID, &r.App, &r.Environment, &r.Version,
		&r.Previous, &r.Author, &r.HeadSHA, &snap, &m, &r.AbortBy, &r.AbortReason, &r.Hold, &wake, &r.CheckRunID, &r.Seq,
		&created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return r, ErrNotFound
	}
	if err != nil {
		return r, fmt.Errorf("read rollout: %w", err)
	}
	if err := json.Unmarshal([]byte(snap), &r.Snapshot); err != nil {
		return r, fmt.Errorf("decode plan of rollout %s: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(m), &r.Machine); err != nil {
		return r, fmt.Errorf("decode state of rollout %s: %w", r.ID, err)
	}
	r.WakeAt, r.CreatedAt, r.UpdatedAt = timeOrZero(wake), store.Time(created), store.Time(updated)
	return r, nil
}

func timeOrZero(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return store.Time(us)
}

func microsOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return store.Micros(t)
}

const selectRollout = `SELECT ` + rolloutColumns + ` FROM rollouts WHERE id = $1`

func getRollout(ctx context.Context, q querier, id string) (Rollout, error) {
	return scanRollout(q.QueryRowContext(ctx, selectRollout, id))
}

// getRolloutToSave reads rollout id in tx for a save that must not lose to
// a tick's (store.DB.ForUpdate): lost, it was errMoved, which failed the
// transaction's whole delivery and retried it after its backoff while the
// rollout went on calling GitHub.
func getRolloutToSave(ctx context.Context, db *store.DB, tx *sql.Tx, id string) (Rollout, error) {
	return scanRollout(tx.QueryRowContext(ctx, selectRollout+db.ForUpdate(), id))
}

func rolloutOfRelease(ctx context.Context, q querier, releaseID string) (Rollout, error) {
	return scanRollout(q.QueryRowContext(ctx, `SELECT `+rolloutColumns+` FROM rollouts WHERE release_id = $1`, releaseID))
}

// saveMachine stores r's machine, and the rollback version chosen when it
// left the queue, if nobody saved since r was read.
func saveMachine(ctx context.Context, tx *sql.Tx, r *Rollout, now time.Time) error {
	m, err := json.Marshal(r.Machine)
	if err != nil {
		return fmt.Errorf("encode state of rollout %s: %w", r.ID, err)
	}
	res, err := tx.ExecContext(ctx, `UPDATE rollouts SET machine = $1, status = $2, phase = $3, wake_at = $4, previous = $5,
		seq = seq + 1, updated_at = $6 WHERE id = $7 AND seq = $8`,
		string(m), string(r.Machine.Status), string(r.Machine.Phase), microsOrZero(r.WakeAt), r.Previous, store.Micros(now), r.ID, r.Seq)
	if err != nil {
		return fmt.Errorf("save rollout %s: %w", r.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return errors.Join(errMoved, err)
	}
	r.Seq++
	return nil
}

// listRollouts reads the rollouts of app and environment, newest first;
// unfinished keeps those not done.
func listRollouts(ctx context.Context, q querier, app, environment string, unfinished bool, limit int) ([]Rollout, error) {
	where := ""
	if unfinished {
		where = ` AND phase <> 'done'` // a literal: the index of the rollouts not done matches
	}
	rows, err := q.QueryContext(ctx, `SELECT `+rolloutColumns+` FROM rollouts WHERE app = $1 AND environment = $2`+where+`
		ORDER BY created_at DESC, id DESC LIMIT $3`, app, environment, limit)
	if err != nil {
		return nil, fmt.Errorf("rollouts of %s/%s: %w", app, environment, err)
	}
	defer rows.Close()
	var out []Rollout
	for rows.Next() {
		r, err := scanRollout(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// ahead names the rollout of r's app and environment that r waits for, or
// "" when there is none: one that has left the queue and not ended (it
// deploys, bakes, waits for an approval or a freeze, or rolls back),
// whatever its age, else the oldest that started before r and has not
// ended. A rollout's created_at is taken before its row is committed (by
// a start job that commits late, or on a replica whose clock is behind),
// so one older by created_at can appear after a newer one left the queue:
// it must wait for that one, or two versions would be deployed to the same
// hosts at once.
func ahead(ctx context.Context, q querier, r Rollout) (string, error) {
	var id, release string
	// The phases are literals, so that the index of the rollouts not done
	// (migration 00010) matches.
	err := q.QueryRowContext(ctx, `SELECT id, release_id FROM rollouts
		WHERE app = $1 AND environment = $2 AND phase <> 'done' AND id <> $4
		AND (phase <> 'queue' OR created_at < $3 OR created_at = $3 AND id < $4)
		ORDER BY CASE WHEN phase = 'queue' THEN 1 ELSE 0 END, created_at, id LIMIT 1`,
		r.App, r.Environment, store.Micros(r.CreatedAt), r.ID).Scan(&id, &release)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("rollouts ahead of %s: %w", r.ID, err)
	}
	return fmt.Sprintf("rollout %s of release %s", id, release), nil
}

// holdBehind holds the rollouts queued behind r, which failed after
// deploying: each was merged on top of r's release and may carry the same
// fault, so none starts when the queue clears, and the first would
// otherwise start at once (after a rollback of r's release, on top of the
// rollback). A rollout held already keeps its first reason. The hold
// counts as a move (seq): a tick of a held rollout that read it before, and
// then found nothing ahead, loses its save instead of starting it.
func holdBehind(ctx context.Context, tx *sql.Tx, r Rollout) error {
	why := fmt.Sprintf("rollout %s of release %s, ahead of it, failed after deploying", r.ID, r.ReleaseID)
	if _, err := tx.ExecContext(ctx, `UPDATE rollouts SET hold = $1, seq = seq + 1
		WHERE app = $2 AND environment = $3 AND phase = 'queue' AND hold = ''`, why, r.App, r.Environment); err != nil {
		return fmt.Errorf("hold the rollouts queued behind %s: %w", r.ID, err)
	}
	return nil
}

// queueTicksBehind queues a tick for every rollout of app and environment
// that waits in the queue: the rollout ahead of them has ended.
func queueTicksBehind(ctx context.Context, tx *sql.Tx, rc *river.Client[*sql.Tx], app, environment string) error {
	ids, err := selectIDs(ctx, tx, `SELECT id FROM rollouts
		WHERE app = $1 AND environment = $2 AND phase = 'queue'`, app, environment)
	if err != nil {
		return fmt.Errorf("rollouts queued for %s/%s: %w", app, environment, err)
	}
	for _, id := range ids {
		if err := queueTickTx(ctx, tx, rc, id); err != nil {
			return err
		}
	}
	return nil
}

// selectIDs runs query, which selects rollout ids, and returns them all,
// read before any is acted on (a transaction's connection runs one
// statement at a time).
func selectIDs(ctx context.Context, q querier, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// loadRuns reads every batch dispatched for a rollout; the probe
// workflows of readings are not batches (probes.go).
func loadRuns(ctx context.Context, q querier, id string) (map[Ref]Run, error) {
	rows, err := q.QueryContext(ctx, `SELECT kind, stage, pass, batch, run_id, state, detail, dispatched_at
		FROM rollout_batches WHERE rollout_id = $1 AND kind <> 'probe'`, id)
	if err != nil {
		return nil, fmt.Errorf("batches of rollout %s: %w", id, err)
	}
	defer rows.Close()
	out := map[Ref]Run{}
	for rows.Next() {
		var ref Ref
		var run Run
		var at int64
		if err := rows.Scan(&ref.Kind, &ref.Stage, &ref.Pass, &ref.Batch, &run.RunID, &run.State, &run.Detail, &at); err != nil {
			return nil, fmt.Errorf("batches of rollout %s: %w", id, err)
		}
		run.DispatchedAt = store.Time(at)
		out[ref] = run
	}
	return out, rows.Err()
}

// Dispatched is one batch run of a rollout, in the order it was dispatched.
type Dispatched struct {
	Ref   Ref
	Name  string
	RunID int64
	State string
}

func listDispatched(ctx context.Context, q querier, id string) ([]Dispatched, error) {
	rows, err := q.QueryContext(ctx, `SELECT kind, stage, pass, batch, name, run_id, state
		FROM rollout_batches WHERE rollout_id = $1 AND kind <> 'probe' ORDER BY ord`, id)
	if err != nil {
		return nil, fmt.Errorf("batches of rollout %s: %w", id, err)
	}
	defer rows.Close()
	var out []Dispatched
	for rows.Next() {
		var d Dispatched
		if err := rows.Scan(&d.Ref.Kind, &d.Ref.Stage, &d.Ref.Pass, &d.Ref.Batch, &d.Name, &d.RunID, &d.State); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// dispatchedOf is listDispatched of each of the rollouts ids, by id: one
// query for them all (a page of the list), not one each.
func dispatchedOf(ctx context.Context, q querier, ids []string) (map[string][]Dispatched, error) {
	out := map[string][]Dispatched{}
	if len(ids) == 0 {
		return out, nil
	}
	in, args := inList(ids)
	rows, err := q.QueryContext(ctx, `SELECT rollout_id, kind, stage, pass, batch, name, run_id, state
		FROM rollout_batches WHERE rollout_id IN (`+in+`) AND kind <> 'probe'
		ORDER BY rollout_id, ord`, args...)
	if err != nil {
		return nil, fmt.Errorf("batches of rollouts %s: %w", strings.Join(ids, ", "), err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var d Dispatched
		if err := rows.Scan(&id, &d.Ref.Kind, &d.Ref.Stage, &d.Ref.Pass, &d.Ref.Batch, &d.Name, &d.RunID, &d.State); err != nil {
			return nil, err
		}
		out[id] = append(out[id], d)
	}
	return out, rows.Err()
}

// claimBatch records that ref is about to be dispatched; false when it was
// claimed before, so it is never dispatched twice.
func claimBatch(ctx context.Context, tx *sql.Tx, id string, ref Ref, name string, now time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO rollout_batches
		(rollout_id, kind, stage, pass, batch, name, ord, state, dispatched_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, (SELECT COUNT(*) + 1 FROM rollout_batches WHERE rollout_id = $1), $7, $8, $8)
		ON CONFLICT (rollout_id, kind, stage, pass, batch) DO NOTHING`,
		id, ref.Kind, ref.Stage, ref.Pass, ref.Batch, name, RunDispatching, store.Micros(now))
	if err != nil {
		return false, fmt.Errorf("claim %s of rollout %s: %w", name, id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// unclaimBatch takes back the claim of a batch that was not dispatched
// after all, so that the machine may dispatch it later, or never.
func unclaimBatch(ctx context.Context, tx *sql.Tx, id string, ref Ref) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM rollout_batches
		WHERE rollout_id = $1 AND kind = $2 AND stage = $3 AND pass = $4 AND batch = $5 AND state = $6`,
		id, ref.Kind, ref.Stage, ref.Pass, ref.Batch, RunDispatching)
	if err != nil {
		return fmt.Errorf("take back the claim of a batch of rollout %s: %w", id, err)
	}
	return nil
}

// setBatch records what became of a batch's run.
func setBatch(ctx context.Context, tx *sql.Tx, id string, ref Ref, runID int64, state, detail string, now time.Time) error {
	_, err := tx.ExecContext(ctx, `UPDATE rollout_batches SET run_id = $1, state = $2, detail = $3, updated_at = $4
		WHERE rollout_id = $5 AND kind = $6 AND stage = $7 AND pass = $8 AND batch = $9`,
		runID, state, detail, store.Micros(now), id, ref.Kind, ref.Stage, ref.Pass, ref.Batch)
	if err != nil {
		return fmt.Errorf("update batch of rollout %s: %w", id, err)
	}
	return nil
}

// batchOfRun finds the batch a workflow run was dispatched for.
func batchOfRun(ctx context.Context, q querier, repository string, runID int64) (string, Ref, string, bool, error) {
	var id, state string
	var ref Ref
	err := q.QueryRowContext(ctx, `SELECT b.rollout_id, b.kind, b.stage, b.pass, b.batch, b.state
		FROM rollout_batches b JOIN rollouts r ON r.id = b.rollout_id
		WHERE b.run_id = $1 AND r.repository = $2`, runID, repository).
		Scan(&id, &ref.Kind, &ref.Stage, &ref.Pass, &ref.Batch, &state)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ref, "", false, nil
	}
	if err != nil {
		return "", ref, "", false, fmt.Errorf("batch of run %d: %w", runID, err)
	}
	return id, ref, state, true, nil
}

func insertReading(ctx context.Context, tx *sql.Tx, id string, req ReadRequest, at time.Time, green bool, reasons string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO rollout_readings (rollout_id, stage, pass, batch, n, at, green, reasons)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, id, req.Stage, req.Pass, req.Batch, req.N, store.Micros(at), green, reasons)
	if err != nil {
		return fmt.Errorf("store reading %d of rollout %s: %w", req.N, id, err)
	}
	return nil
}

func loadApprovals(ctx context.Context, q querier, id string, stage int) ([]Approval, error) {
	rows, err := q.QueryContext(ctx, `SELECT login, approve, at FROM rollout_approvals
		WHERE rollout_id = $1 AND stage = $2 ORDER BY at, login`, id, stage)
	if err != nil {
		return nil, fmt.Errorf("approvals of rollout %s: %w", id, err)
	}
	defer rows.Close()
	var out []Approval
	for rows.Next() {
		var a Approval
		var at int64
		if err := rows.Scan(&a.Login, &a.Approve, &at); err != nil {
			return nil, err
		}
		a.At = store.Time(at)
		out = append(out, a)
	}
	return out, rows.Err()
}

// insertApproval stores a vote; a second vote of the same person on the
// same wait is ignored (false).
func insertApproval(ctx context.Context, tx *sql.Tx, id string, stage int, a Approval, comment string) (bool, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO rollout_approvals (rollout_id, stage, login, approve, comment, at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (rollout_id, stage, login) DO NOTHING`,
		id, stage, a.Login, a.Approve, comment, store.Micros(a.At))
	if err != nil {
		return false, fmt.Errorf("store approval of rollout %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// insertAudit adds a line to a rollout's audit trail.
//
// A line is numbered one past the rollout's last. On PostgreSQL two
// transactions can take the same number (an operator's abort and a tick,
// neither of which has locked the rollout yet): the second's insert waits
// for the first's row, finds the number taken once it commits, and
// numbers again from a new snapshot that sees it. SQLite's one writer
// never meets the conflict.
func insertAudit(ctx context.Context, tx *sql.Tx, id string, at time.Time, typ, message string) error {
	for range auditNumberTries {
		res, err := tx.ExecContext(ctx, `INSERT INTO rollout_audit (rollout_id, n, at, type, message)
			VALUES ($1, (SELECT COALESCE(MAX(n), 0) + 1 FROM rollout_audit WHERE rollout_id = $1), $2, $3, $4)
			ON CONFLICT (rollout_id, n) DO NOTHING`,
			id, store.Micros(at), typ, message)
		if err != nil {
			return fmt.Errorf("audit of rollout %s: %w", id, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
	}
	return fmt.Errorf("audit of rollout %s: its line number was taken %d times in a row by other transactions", id, auditNumberTries)
}

// auditNumberTries bounds insertAudit's numbering: each conflict means
// another transaction committed a line of the same rollout meanwhile.
const auditNumberTries = 10

// AuditLine is one line of a rollout's audit trail.
type AuditLine struct {
	At      time.Time `json:"at"`
	Type    string    `json:"type"`
	Message string    `json:"message"`
}

func listAudit(ctx context.Context, q querier, id string) ([]AuditLine, error) {
	rows, err := q.QueryContext(ctx, `SELECT at, type, message FROM rollout_audit WHERE rollout_id = $1 ORDER BY n`, id)
	if err != nil {
		return nil, fmt.Errorf("audit of rollout %s: %w", id, err)
	}
	defer rows.Close()
	var out []AuditLine
	for rows.Next() {
		var l AuditLine
		var at int64
		if err := rows.Scan(&at, &l.Type, &l.Message); err != nil {
			return nil, err
		}
		l.At = store.Time(at)
		out = append(out, l)
	}
	return out, rows.Err()
}

// inList is the placeholders of a SQL IN list of ids ("$1, $2, …") and
// its arguments.
func inList(ids []string) (string, []any) {
	in := make([]string, len(ids))
	args := make([]any, len(ids))
	for i, id := range ids {
		in[i], args[i] = fmt.Sprintf("$%d", i+1), id
	}
	return strings.Join(in, ", "), args
}
