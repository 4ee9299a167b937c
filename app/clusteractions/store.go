package clusteractions

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/deployments"
	"github.com/ripcord/ripcord/app/recoveryflow"
	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/records"
)

// Action states.
const (
	StatePending = "pending"
	StateClaimed = "claimed"
	StateDone    = "done"
	StateFailed  = "failed"
)

// ClaimTimeout is how long a claimed action may go without a result before
// it fails: well past a rollback's own bounds (300 s of rollout and 300 s
// of health by default), so only an agent that lost its state folder (and
// with it its identity) leaves one behind.
const ClaimTimeout = time.Hour

// errTypeClaimExpired is the error type of a claim that got no result
// within ClaimTimeout; its agent's own result, when it comes after all,
// replaces it.
const errTypeClaimExpired = "claim_expired"

// errTypeNotClaimed is the error type of an action no agent claimed within
// ClaimTimeout of being queued: nothing was done, and it is never handed
// out after that, since a rollback carried out hours or days after its
// episode ended or alerted a person is one nobody expects.
const errTypeNotClaimed = "not_claimed"

// claimGrace is how long after a server starts it expires no claim: an
// agent that finished an action while the server was down reports it
// within its backoff (30 s at most by default) once the server is back.
const claimGrace = 5 * time.Minute

// claimBatch bounds the actions handed out by one poll.
const claimBatch = 20

// Stored is an action as the server keeps it.
type Stored struct {
	ID         string            `json:"id"`
	Cluster    string            `json:"cluster"`
	State      string            `json:"state"`
	Agent      string            `json:"agent,omitempty"`
	Action     actionapi.Action  `json:"action"`
	Result     *actionapi.Result `json:"result,omitempty"`
	CreatedAt  time.Time         `json:"created_at"`
	ClaimedAt  *time.Time        `json:"claimed_at,omitempty"`
	FinishedAt *time.Time        `json:"finished_at,omitempty"`
}

// ErrNotFound: no action with that id (in that cluster).
var ErrNotFound = errors.New("cluster action not found")

const storedColumns = `id, cluster, state, agent, spec, result, created_at, claimed_at, finished_at`

// openOnly is the WHERE term of the partial index cluster_actions_open
// (00004), said by every query that reads only pending or claimed actions.
// It changes no answer: SQLite reads a partial index only for a query
// whose WHERE has the index's term itself, and state = 'pending' is not
// proof enough for it, so without the term it walked all of a cluster's
// actions, done ones of every past rollback included. PostgreSQL proves
// the index from either.
const openOnly = `state IN ('pending', 'claimed')`

// Get reads one action, for the recovery flow to learn how it ended.
func Get(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, id string) (Stored, error) {
	s, err := scanStored(q.QueryRowContext(ctx, `SELECT `+storedColumns+` FROM cluster_actions WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return s, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return s, err
}

type scanner interface{ Scan(...any) error }

func scanStored(row scanner) (Stored, error) {
	var (
		s                      Stored
		spec, result           string
		created, claimed, done int64
	)
	if err := row.Scan(&s.ID, &s.Cluster, &s.State, &s.Agent, &spec, &result, &created, &claimed, &done); err != nil {
		return s, err
	}
	if err := json.Unmarshal([]byte(spec), &s.Action); err != nil {
		return s, fmt.Errorf("cluster action %s: stored spec: %w", s.ID, err)
	}
	if result != "" {
		s.Result = &actionapi.Result{}
		if err := json.Unmarshal([]byte(result), s.Result); err != nil {
			return s, fmt.Errorf("cluster action %s: stored result: %w", s.ID, err)
		}
	}
	s.CreatedAt, s.ClaimedAt, s.FinishedAt = store.Time(created), store.TimePtr(&claimed), store.TimePtr(&done)
	return s, nil
}

// actionStore is the queue's SQL.
type actionStore struct {
	db      *store.DB
	records *records.Store
	// river queues, in an action's own transaction, the end of the
	// recovery episode a failed rollback action leaves without a rollback.
	river func() *river.Client[*sql.Tx]
	log   *slog.Logger
	// started is when this server started: see claimGrace.
	started time.Time
}

// hasWork is a read-only look (no write transaction) at whether a poll
// would hand out anything: pending actions of the agent's namespace (any,
// for namespace ""), this agent's claims when resuming, or actions to
// expire, of any namespace, since the poll expires the whole cluster's.
// Another namespace's pending action is no work: counted, it would have
// the poll claim nothing in a write transaction every pollInterval until
// that action's agent took it.
func (s *actionStore) hasWork(ctx context.Context, cluster, agent, namespace string, resume bool, now time.Time) (bool, error) {
	cutoff, expiring := s.expireBefore(now)
	if !expiring {
		cutoff = time.Time{} // no claim is older than that
	}
	args := []any{cluster, store.Micros(cutoff)}
	pending := "state = 'pending'"
	if namespace != "" {
		args = append(args, namespace, store.Micros(notClaimedBefore(now)))
		pending += fmt.Sprintf(" AND (%s = $%d OR created_at < $%d)", s.specNamespace(), len(args)-1, len(args))
	}
	mine := ""
	if resume {
		args = append(args, agent)
		mine = fmt.Sprintf("agent = $%d OR ", len(args))
	}
	var n int
	err := s.db.Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM cluster_actions
		WHERE cluster = $1 AND `+openOnly+` AND ((`+pending+`) OR (state = 'claimed' AND (`+mine+`claimed_at < $2)))`, args...).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("look for actions of %s: %w", cluster, err)
	}
	return n > 0, nil
}

// specNamespace is the SQL of an action's namespace, kept in its spec (the
// workload it is about). It filters rows cluster_actions_open already
// narrowed to one cluster's open actions, a handful, so the plans are
// unchanged: a column of its own would need a migration and a backfill of
// every stored spec for no faster query.
func (s *actionStore) specNamespace() string {
	if s.db.Dialect == store.Postgres {
		return `(spec::jsonb ->> 'namespace')`
	}
	return `json_extract(spec, '$.namespace')`
}

// claim hands pending actions to agent (and, when resuming, the ones it
// claimed before) after failing claims older than ClaimTimeout and pending
// actions queued longer ago than that. The pending ones are also filtered
// by their age here, so none too old is handed out even before it was
// failed.
//
// An agent that watches one namespace says which: it is handed only the
// actions of a workload there, so that two agents of one cluster, each
// watching its own namespace (and often allowed to patch Deployments only
// there), never take each other's rollbacks. namespace "" is an agent
// that watches every namespace, or one from before agents said theirs: it
// is handed any of the cluster's actions, as before. Its own claims, when
// resuming, come back whatever their namespace: the agent that claimed an
// action is the one to finish it or give it back.
func (s *actionStore) claim(ctx context.Context, cluster, agent, namespace string, resume bool, now time.Time) ([]actionapi.Action, error) {
	var out []actionapi.Action
	err := s.db.InTx(ctx, func(tx *sql.Tx) error {
		out = nil
		if err := s.expire(ctx, tx, cluster, now); err != nil {
			return err
		}
		if resume {
			mine, err := selectSpecs(ctx, tx, `SELECT id, spec FROM cluster_actions
				WHERE cluster = $1 AND `+openOnly+` AND state = 'claimed' AND agent = $2 ORDER BY created_at, id`, cluster, agent)
			if err != nil {
				return err
			}
			out = append(out, mine...)
		}
		inNamespace, args := "", []any{cluster, store.Micros(notClaimedBefore(now))}
		if namespace != "" {
			inNamespace, args = " AND "+s.specNamespace()+" = $3", append(args, namespace)
		}
		pending, err := selectSpecs(ctx, tx, fmt.Sprintf(`SELECT id, spec FROM cluster_actions
			WHERE cluster = $1 AND `+openOnly+` AND state = 'pending' AND created_at >= $2`+inNamespace+` ORDER BY created_at, id LIMIT %d`, claimBatch),
			args...)
		if err != nil {
			return err
		}
		for _, a := range pending {
			res, err := tx.ExecContext(ctx, `UPDATE cluster_actions SET state = 'claimed', agent = $1, claimed_at = $2
				WHERE id = $3 AND state = 'pending'`, agent, store.Micros(now), a.ID)
			if err != nil {
				return fmt.Errorf("claim action %s: %w", a.ID, err)
			}
			// Another replica's poll may have claimed it in between.
			if n, _ := res.RowsAffected(); n == 1 {
				out = append(out, a)
			}
		}
		return nil
	})
	return out, err
}

func selectSpecs(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]actionapi.Action, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list actions: %w", err)
	}
	defer rows.Close()
	var out []actionapi.Action
	for rows.Next() {
		var id, spec string
		if err := rows.Scan(&id, &spec); err != nil {
			return nil, fmt.Errorf("list actions: %w", err)
		}
		var a actionapi.Action
		if err := json.Unmarshal([]byte(spec), &a); err != nil {
			return nil, fmt.Errorf("action %s: stored spec: %w", id, err)
		}
		a.ID = id
		out = append(out, a)
	}
	return out, rows.Err()
}

// expireBefore is the claim time before which a claim without a result
// has expired, and false while none may expire: during claimGrace after
// the server started, since time the server was down is time no agent
// could report in.
func (s *actionStore) expireBefore(now time.Time) (time.Time, bool) {
	return now.Add(-ClaimTimeout), !now.Before(s.started.Add(claimGrace))
}

// notClaimedBefore is the queue time before which a pending action is no
// longer handed out. Unlike a claim's expiry it has no grace after a server
// start: the server's downtime makes a rollback no more expected, and no
// agent holds the action, so there is no result to wait for.
func notClaimedBefore(now time.Time) time.Time { return now.Add(-ClaimTimeout) }

// expire fails the pending actions no agent claimed within ClaimTimeout,
// and the claims that got no result within it. Both in the order claim
// hands actions out: two servers expiring the same cluster then lock its
// rows (and, through finishTx, the cluster's records) in one order, and
// on PostgreSQL one waits for the other instead of deadlocking.
func (s *actionStore) expire(ctx context.Context, tx *sql.Tx, cluster string, now time.Time) error {
	unclaimed, err := selectStored(ctx, tx, `SELECT `+storedColumns+` FROM cluster_actions
		WHERE cluster = $1 AND `+openOnly+` AND state = 'pending' AND created_at < $2 ORDER BY created_at, id`, cluster, store.Micros(notClaimedBefore(now)))
	if err != nil {
		return fmt.Errorf("expire pending actions of %s: %w", cluster, err)
	}
	for _, st := range unclaimed {
		// Said with the namespace: the cluster's agents may all be up,
		// none of them watching this one.
		reason := fmt.Sprintf("no agent of cluster %s took the action within %s of it being queued at %s (it is handed only to an agent watching namespace %s, or every namespace); nothing was done, and it will not be handed out any more",
			st.Cluster, ClaimTimeout, st.CreatedAt.Format(time.RFC3339), st.Action.Namespace)
		if _, _, err := s.finishIn(ctx, tx, st, expiredResult("", errTypeNotClaimed, reason, now), now, true); err != nil {
			return err
		}
	}
	cutoff, expiring := s.expireBefore(now)
	if !expiring {
		return nil
	}
	stale, err := selectStored(ctx, tx, `SELECT `+storedColumns+` FROM cluster_actions
		WHERE cluster = $1 AND `+openOnly+` AND state = 'claimed' AND claimed_at < $2 ORDER BY created_at, id`, cluster, store.Micros(cutoff))
	if err != nil {
		return fmt.Errorf("expire claims of %s: %w", cluster, err)
	}
	for _, st := range stale {
		reason := fmt.Sprintf("agent %s claimed the action at %s and reported no result within %s; it was not handed to another agent, so it may or may not have been carried out",
			st.Agent, st.ClaimedAt.Format(time.RFC3339), ClaimTimeout)
		if _, _, err := s.finishIn(ctx, tx, st, expiredResult(st.Agent, errTypeClaimExpired, reason, now), now, true); err != nil {
			return err
		}
	}
	return nil
}

// expiredResult is the result the server records for an action that timed
// out: a failed rollback with its rollback_failed audit event, as the
// episode and the audit log hear of any rollback that failed.
func expiredResult(agent, errType, reason string, now time.Time) actionapi.Result {
	return actionapi.Result{Agent: agent, Status: actionapi.StatusFailed, Outcome: actionapi.OutcomeRollbackFailed,
		ErrorType: errType, Reason: reason,
		Audit: []actionapi.AuditEvent{{Type: string(records.AuditRollbackFailed), At: now, Message: reason,
			Data: map[string]any{"error_type": errType}}}}
}

// selectStored reads the actions a query selects (storedColumns).
func selectStored(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]Stored, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Stored
	for rows.Next() {
		st, err := scanStored(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

// finishOutcome is how a reported result was taken.
type finishOutcome int

const (
	finishRecorded finishOutcome = iota
	finishRepeat                 // the same status was recorded before
	finishNotFound
	finishConflict
)

// finish records an agent's result: only for the agent that claimed it,
// once; a repeat of the same status is accepted and changes nothing.
//
// On PostgreSQL the action is read FOR UPDATE: two results for one action
// (two replicas of an agent, or a retry racing the first request) would
// otherwise both read it claimed, and both be stored, each with its audit
// events and its end of the episode. Locked, the second waits for the first
// and is judged against its result: a repeat, or a conflict. SQLite's one
// writer already runs the two transactions one after the other.
func (s *actionStore) finish(ctx context.Context, cluster, id string, res actionapi.Result, now time.Time) (Stored, finishOutcome, string, error) {
	var (
		st      Stored
		outcome finishOutcome
		why     string
	)
	err := s.db.InTx(ctx, func(tx *sql.Tx) error {
		var err error
		st, err = scanStored(tx.QueryRowContext(ctx, `SELECT `+storedColumns+` FROM cluster_actions WHERE id = $1 AND cluster = $2`+s.db.ForUpdate(), id, cluster))
		if errors.Is(err, sql.ErrNoRows) {
			outcome, why = finishNotFound, fmt.Sprintf("cluster %s has no action %s", cluster, id)
			return nil
		}
		if err != nil {
			return err
		}
		outcome, why = decideFinish(st, res)
		switch {
		case outcome != finishRecorded:
			return nil
		case res.Status == actionapi.StatusNotStarted:
			if st, err = requeue(ctx, tx, st); err != nil {
				return err
			}
			return s.records.InsertAudit(ctx, tx, requeuedEvent(st, res, now))
		}
		st, err = s.finishTx(ctx, tx, st, res, now)
		return err
	})
	return st, outcome, why, err
}

// decideFinish is whether a result may be recorded for a stored action. A
// not_started result (the claimant gives the action back untouched) is
// recorded by putting the action back to pending; said again by the same
// agent while it is pending, it is a repeat.
func decideFinish(st Stored, res actionapi.Result) (finishOutcome, string) {
	switch st.State {
	case StateClaimed:
		if st.Agent != res.Agent {
			return finishConflict, fmt.Sprintf("action %s is claimed by agent %s, not %s", st.ID, st.Agent, res.Agent)
		}
		return finishRecorded, ""
	case StatePending:
		if res.Status == actionapi.StatusNotStarted && st.Agent != "" && st.Agent == res.Agent {
			return finishRepeat, ""
		}
		return finishConflict, fmt.Sprintf("action %s was never claimed: poll GET /api/v1/clusters/%s/actions first", st.ID, st.Cluster)
	default:
		if res.Status == actionapi.StatusNotStarted {
			// An action that ended (an expired claim included) is never
			// handed out again.
			return finishConflict, fmt.Sprintf("action %s already ended %s; it is not handed out again", st.ID, st.State)
		}
		if st.Result != nil && st.Agent == res.Agent && st.Result.Status == res.Status &&
			st.Result.Outcome == res.Outcome && st.Result.ErrorType == res.ErrorType {
			return finishRepeat, ""
		}
		// The claim expired while its agent could not reach the server
		// (a network partition longer than ClaimTimeout): what that agent
		// did replaces "may or may not have been carried out".
		if st.Result != nil && st.Result.ErrorType == errTypeClaimExpired && st.Agent == res.Agent {
			return finishRecorded, ""
		}
		return finishConflict, fmt.Sprintf("action %s already ended %s", st.ID, st.State)
	}
}

// requeue puts an action its claimant gave back untouched (not_started)
// back to pending, for the next poll of any agent of the cluster. It keeps
// the agent, so that agent saying it again is a repeat, and its queue time,
// so expire still fails it not_claimed once no agent has taken it within
// ClaimTimeout of being queued: an agent stopped again and again cannot
// keep it waiting for ever. It writes no audit event and leaves the episode
// alone: nothing happened.
func requeue(ctx context.Context, tx *sql.Tx, st Stored) (Stored, error) {
	if _, err := tx.ExecContext(ctx, `UPDATE cluster_actions SET state = 'pending', claimed_at = 0 WHERE id = $1 AND state = 'claimed'`, st.ID); err != nil {
		return st, fmt.Errorf("action %s: put back to pending: %w", st.ID, err)
	}
	st.State, st.ClaimedAt = StatePending, nil
	return st, nil
}

// requeuedEvent tells the story of the release being rolled back that its
// rollback did not start and waits for an agent again: without it, the
// release's audit would show nothing between "rollback initiated" and an
// agent's result, however long the wait.
func requeuedEvent(st Stored, res actionapi.Result, now time.Time) records.AuditEvent {
	release := st.Action.RollbackOf
	if release == "" {
		release = st.Action.ReleaseID
	}
	msg := fmt.Sprintf("Agent %s gave rollback action %s in cluster %s back untouched", res.Agent, st.ID, st.Cluster)
	if res.Reason != "" {
		msg += " (" + res.Reason + ")"
	}
	msg += "; it is pending again, for the next agent of the cluster that polls."
	data := map[string]any{"action_id": st.ID, "cluster": st.Cluster, "agent": res.Agent,
		"namespace": st.Action.Namespace, "deployment": st.Action.Deployment, "error_type": res.ErrorType}
	if st.Action.ReleaseID != "" {
		data["rollback_release_id"] = st.Action.ReleaseID
	}
	return records.AuditEvent{Type: records.AuditRollbackRequeued, ReleaseID: release, At: now, Message: msg, Data: data}
}

// finishTx stores the result and writes its audit events.
func (s *actionStore) finishTx(ctx context.Context, tx *sql.Tx, st Stored, res actionapi.Result, now time.Time) (Stored, error) {
	st, _, err := s.finishIn(ctx, tx, st, res, now, false)
	return st, err
}

// finishIn is finishTx; when guarded, it stores the result only if the
// action is still in the state st was read in, and reports false, having
// written nothing, when it is not. Expiry reads without locking: on
// PostgreSQL a poll, an agent's result or another server's expiry may end or
// claim the action between the read and the update, which then waits for
// that transaction and must not end the action a second time (a second
// audit event, a second episode end) or overwrite what the agent reported.
func (s *actionStore) finishIn(ctx context.Context, tx *sql.Tx, st Stored, res actionapi.Result, now time.Time, guarded bool) (Stored, bool, error) {
	state := StateFailed
	if res.Status == actionapi.StatusDone {
		state = StateDone
	}
	body, err := json.Marshal(res)
	if err != nil {
		return st, false, fmt.Errorf("action %s: encode result: %w", st.ID, err)
	}
	query, args := `UPDATE cluster_actions SET state = $1, result = $2, finished_at = $3 WHERE id = $4`,
		[]any{state, string(body), store.Micros(now), st.ID}
	if guarded {
		query, args = query+` AND state = $5`, append(args, st.State)
	}
	updated, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return st, false, fmt.Errorf("action %s: store result: %w", st.ID, err)
	}
	if guarded {
		if n, err := updated.RowsAffected(); err != nil {
			return st, false, fmt.Errorf("action %s: store result: %w", st.ID, err)
		} else if n == 0 {
			return st, false, nil
		}
	}
	if err := s.records.InsertAudit(ctx, tx, auditEvents(st, res, now)...); err != nil {
		return st, false, fmt.Errorf("action %s: %w", st.ID, err)
	}
	st.State, st.Result, st.FinishedAt = state, &res, &now
	if state == StateFailed {
		if err := s.endEpisode(ctx, tx, st, res, now); err != nil {
			return st, false, err
		}
	}
	return st, true, nil
}

// endEpisode ends, in the action's transaction, the recovery episode of a
// rollback action that failed or ended without rolling back (skipped, an
// alert, a failure, an expiry): no fact of its rollback release may ever
// come, and the stall alert 15 minutes later would say "stalled" instead
// of why. The outcome job ends only an episode still rolling back, and is
// unique per release and outcome, so a repeated or late failure alerts no
// one twice. A successful action leaves the ending to the release's facts.
func (s *actionStore) endEpisode(ctx context.Context, tx *sql.Tx, st Stored, res actionapi.Result, now time.Time) error {
	release := st.Action.ReleaseID
	if release == "" {
		return nil // no rollback release: no episode waits on it
	}
	reason := fmt.Sprintf("rollback action %s in cluster %s ended %s", st.ID, st.Cluster, res.Outcome)
	if res.ErrorType != "" {
		reason += " (" + res.ErrorType + ")"
	}
	if res.Reason != "" {
		reason += ": " + res.Reason
	}
	// A failure after the patch rolled out (a health check of the agent's
	// own) may come when the facts already made the rollback release
	// healthy, and with it the episode rolled_back: that episode is not
	// changed here, but the release and the log say so.
	rec, err := s.records.Get(ctx, release)
	if err != nil && !errors.Is(err, records.ErrNotFound) {
		return fmt.Errorf("action %s: %w", st.ID, err)
	}
	if err == nil && rec.State == records.StateHealthy {
		s.log.Warn("a rollback action failed after its rollback release became healthy",
			"action_id", st.ID, "cluster", st.Cluster, "rollback_release_id", release, "error_type", res.ErrorType, "reason", res.Reason)
		ev := records.AuditEvent{Type: records.AuditRollbackFailed, ReleaseID: release, At: now,
			Message: fmt.Sprintf("Rollback release %s is healthy by its facts, but %s.", release, reason),
			Data: map[string]any{"action_id": st.ID, "cluster": st.Cluster, "agent": res.Agent,
				"error_type": res.ErrorType, "release_state": string(rec.State)}}
		if err := s.records.InsertAudit(ctx, tx, ev); err != nil {
			return fmt.Errorf("action %s: %w", st.ID, err)
		}
	}
	if err == nil && rec.State == records.StateOpened {
		if err := s.failRollbackRelease(ctx, tx, st, res, reason, now); err != nil {
			return err
		}
	}
	return recoveryflow.QueueRollbackFailed(ctx, tx, s.river(), release, reason)
}

// failRollbackRelease ends the rollback release of an action that failed
// before any fact of it came (records.FailUnrun): nothing will report on
// it, and left opened it would raise a second, "stalled" alert stall_after
// later about a rollback whose episode already said why it failed. A
// release the facts moved on is theirs to end, and is left alone.
func (s *actionStore) failRollbackRelease(ctx context.Context, tx *sql.Tx, st Stored, res actionapi.Result, reason string, now time.Time) error {
	data := map[string]any{"action_id": st.ID, "cluster": st.Cluster, "agent": res.Agent,
		"outcome": res.Outcome, "error_type": res.ErrorType}
	rec, ok, err := s.records.FailUnrunRelease(ctx, tx, st.Action.ReleaseID, reason, data, now)
	if err != nil || !ok {
		return err
	}
	// Its GitHub deployment must not stay in_progress for ever.
	return deployments.Queue(ctx, tx, s.river(), s.log, []records.Record{rec})
}

// auditEvents turns the agent's events into audit events of the release the
// action is about: the failed release (its story goes on with its
// rollback), else the rollback release.
func auditEvents(st Stored, res actionapi.Result, now time.Time) []records.AuditEvent {
	release := st.Action.RollbackOf
	if release == "" {
		release = st.Action.ReleaseID
	}
	out := make([]records.AuditEvent, 0, len(res.Audit))
	for _, e := range res.Audit {
		data := map[string]any{}
		for k, v := range e.Data {
			data[k] = v
		}
		data["action_id"], data["cluster"], data["agent"] = st.ID, st.Cluster, res.Agent
		data["namespace"], data["deployment"] = st.Action.Namespace, st.Action.Deployment
		if st.Action.ReleaseID != "" {
			data["rollback_release_id"] = st.Action.ReleaseID
		}
		at := e.At
		if at.IsZero() {
			at = now
		}
		out = append(out, records.AuditEvent{Type: records.AuditType(e.Type), ReleaseID: release, At: at.UTC(),
			Message: e.Message, Data: data})
	}
	return out
}
