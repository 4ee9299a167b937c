package rolloutflow

import (
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/repoconfig"
)

// StartArgs starts the rollout of a release whose environment has
// `rollout:`; a release without one, or with a rollout already, is left
// alone, so the job may run any number of times. For a rollback release it
// aborts the rollout of the release rolled back instead (stopRolledBack).
type StartArgs struct {
	ReleaseID string `json:"release_id" river:"unique"`
	// Author opened or merged the release: the one person who may not
	// approve its rollout. For a rollback, who asked for it.
	Author         string `json:"author,omitempty"`
	FreezeOverride bool   `json:"freeze_override,omitempty"`
}

// Kind names the job in the queue.
func (StartArgs) Kind() string { return "rollout_start" }

// QueueStart queues the start of a release's rollout in tx, where the
// release was opened: the hook of POST /api/v1/releases and of the merge of
// a release pull request. A release whose environment has no rollout: is
// left alone by the job.
func QueueStart(ctx context.Context, tx *sql.Tx, rc *river.Client[*sql.Tx], a StartArgs) error {
	_, err := rc.InsertTx(ctx, tx, a, &river.InsertOpts{MaxAttempts: 10, UniqueOpts: river.UniqueOpts{ByArgs: true}})
	if err != nil {
		return fmt.Errorf("queue the rollout of release %s: %w", a.ReleaseID, err)
	}
	return nil
}

type startWorker struct {
	river.WorkerDefaults[StartArgs]
	x      *executor
	loader *configload.Loader
}

func (w *startWorker) Work(ctx context.Context, job *river.Job[StartArgs]) error {
	_, err := w.x.start(ctx, w.loader, job.Args)
	var rb *rollbackNotStarted
	if errors.Is(err, errNoRollout) || errors.As(err, &rb) {
		return nil // a release like any other; a rollback's is its mode's
	}
	return err
}

// errNoRollout is a release whose environment has no `rollout:`.
var errNoRollout = errors.New("the environment has no rollout")

// configInvalid is a start refused because the repository's config does
// not validate. Its message lists every problem as `ripcord validate`
// prints them, one a line, so that whoever starts the rollout fixes the
// file in one go rather than one problem per try.
type configInvalid struct {
	release string
	res     configload.Result
}

func (e *configInvalid) Error() string {
	n := len(e.res.Problems)
	lines := []string{fmt.Sprintf("rollout of %s: the repository config %s does not load, %d %s:",
		e.release, e.res.Source, n, map[bool]string{true: "problem", false: "problems"}[n == 1])}
	for _, p := range e.res.Problems {
		lines = append(lines, p.Format(e.res.Source.Path))
	}
	return strings.Join(lines, "\n")
}

func (e *configInvalid) Unwrap() error { return configload.ErrInvalid }

// field is the key of the first problem, which the answer names; for a
// problem with the whole file (a YAML syntax error), which has no key, the
// file and its line (.github/ripcord.yml:12), so that the answer still
// points at what to fix.
func (e *configInvalid) field() string { return e.res.Field() }

// configMissing is a start refused because neither the repository nor its
// organisation has a config: the answer names the file to add, and where
// the load found none (the release's repository, then its organisation's
// .github repository).
type configMissing struct {
	release string
	missing error // the load's Err
}

func (e *configMissing) Error() string {
	return fmt.Sprintf("rollout of %s: %v: add one with the app's environment and its rollout:", e.release, e.missing)
}

func (e *configMissing) field() string { return repoconfig.Path }

// notInstalled is a start refused because ripcord cannot act on the
// release's repository: the answer names the repository.
type notInstalled struct{ msg string }

func (e *notInstalled) Error() string { return e.msg }

// rollbackNotStarted is a start of a rollback release other than its pull
// request's merge: no rollout of it is started, but the rollout of the
// release it rolls back was stopped (stopRolledBack), and stopped says how
// that went.
type rollbackNotStarted struct {
	rec     records.Record
	stopped string
}

func (e *rollbackNotStarted) Error() string {
	how := "it is deployed as the environment's rollback mode (kubernetes, workflow) deploys it: everywhere at once, not in waves"
	if e.rec.ForPullRequest() {
		pr := e.rec.PRURL
		if e.rec.PRNumber > 0 {
			pr = fmt.Sprintf("#%d", e.rec.PRNumber)
		}
		how = fmt.Sprintf("it is rolled out in waves when its pull request %s is merged", pr)
	}
	return fmt.Sprintf("release %s is a rollback of %s: no rollout of it was started, %s; %s",
		e.rec.ReleaseID, e.rec.RollbackOf, how, e.stopped)
}

// start loads the release's config and stores its rollout with the first
// tick; it returns the rollout (the one stored before, if any).
func (x *executor) start(ctx context.Context, loader *configload.Loader, a StartArgs) (Rollout, error) {
	return x.startRelease(ctx, loader, a, false, "")
}

// startMerged is start for a release whose pull request was just merged
// (mergeWorker): a rollback release too is rolled out then, as any release
// of the environment is deployed (seed 003: a rollback goes through the
// same pull request, merge and facts as any other release).
// mergeSHA is the pull request's merge commit: the ripcord/rollout check
// run of a rollback release goes there, on the change its reviewers
// merged, not on the rollback's git_revision (the old commit it returns
// to, which no reviewer of the rollback looks at).
func (x *executor) startMerged(ctx context.Context, loader *configload.Loader, a StartArgs, mergeSHA string) (Rollout, error) {
	return x.startRelease(ctx, loader, a, true, mergeSHA)
}

func (x *executor) startRelease(ctx context.Context, loader *configload.Loader, a StartArgs, merged bool, mergeSHA string) (Rollout, error) {
	if r, err := rolloutOfRelease(ctx, x.deps.DB.Read, a.ReleaseID); err == nil {
		return r, nil
	}
	rec, err := x.deps.Records.Get(ctx, a.ReleaseID)
	if err != nil {
		return Rollout{}, fmt.Errorf("release %s: %w", a.ReleaseID, err)
	}
	if rec.Kind == records.KindRollback {
		// The release rolled back must not reach more targets. A rollback
		// opened is not deployed by ripcord yet: one of mode kubernetes or
		// workflow, or opened through the API, goes back everywhere at
		// once, as the seed's rollback does; one of mode pull-request is
		// deployed when its pull request is merged (merged).
		stopped, err := x.stopRolledBack(ctx, rec, a.Author)
		if err != nil {
			return Rollout{}, err
		}
		if !merged {
			return Rollout{}, &rollbackNotStarted{rec: rec, stopped: stopped}
		}
	}
	rec, inst, snap, err := x.prepare(ctx, loader, rec, a, mergeSHA)
	if err != nil {
		return Rollout{}, err
	}
	return x.create(ctx, rec, inst, snap, a.Author)
}

// startNew opens rec, a release not stored yet, and starts its rollout
// (POST /api/v1/rollouts, `ripcord rollout start`). Every check that can
// refuse the start (the App not installed, the config, no rollout:, GitHub
// errors) runs before anything is written, and the release is opened in
// the transaction that stores its rollout: a refused start leaves no
// release behind, opened with no deploy to report on, that would stall and
// show in the releases list as if deploying; the same request sent again
// starts afresh.
func (x *executor) startNew(ctx context.Context, loader *configload.Loader, rec records.Record, a StartArgs) (Rollout, error) {
	started, inst, snap, err := x.prepare(ctx, loader, rec, a, "")
	if err != nil {
		return Rollout{}, err
	}
	// The release is stored as sent: started may carry the default
	// branch's head, which is the check run's commit, not the release's.
	return x.createOpening(ctx, started, inst, snap, a.Author, func(tx *sql.Tx) error {
		_, _, err := x.deps.Records.OpenRelease(ctx, tx, rec, x.deps.Now())
		return err
	})
}

// prepare reads what the rollout of rec needs, writing nothing: its
// installation, its plan from the repository's config, the commit its
// check run goes on (rec's git_revision as returned). Every refusal of a
// start but the ones create meets comes from here.
func (x *executor) prepare(ctx context.Context, loader *configload.Loader, rec records.Record, a StartArgs, mergeSHA string) (records.Record, int64, Snapshot, error) {
	fail := func(err error) (records.Record, int64, Snapshot, error) { return records.Record{}, 0, Snapshot{}, err }
	inst, err := installationOf(ctx, x.deps, rec.Repository)
	if err != nil {
		return fail(err)
	}
	gh, err := x.deps.GitHub.NewInstallationClient(inst)
	if pipeline.AppNotConfigured(err) {
		// An installation stored while the server has no App (its
		// events are stored all the same): the server's set-up is what
		// to fix, said as when none is stored (installationOf).
		return fail(&pipeline.NoApp{Repository: rec.Repository})
	}
	if err != nil {
		return fail(fmt.Errorf("github client for installation %d: %w", inst, err))
	}
	cfg, err := loader.Load(ctx, gh.Repositories, rec.Repository, "")
	if err != nil {
		return fail(err)
	}
	if cfg.Found && len(cfg.Problems) > 0 {
		return fail(&configInvalid{release: rec.ReleaseID, res: cfg})
	}
	if !cfg.Found {
		return fail(&configMissing{release: rec.ReleaseID, missing: cfg.Err()})
	}
	if !cfg.Valid() {
		return fail(fmt.Errorf("rollout of %s: %w", rec.ReleaseID, cfg.Err()))
	}
	env, ok := cfg.Config.Environment(rec.App, rec.Environment)
	if !ok || env.Plan == nil {
		return fail(errNoRollout)
	}
	owner, name, _ := strings.Cut(rec.Repository, "/")
	repo, _, err := gh.Repositories.Get(ctx, owner, name)
	if err != nil {
		return fail(fmt.Errorf("default branch of %s: %w", rec.Repository, err))
	}
	snap := SnapshotFor(env.Plan, repo.GetDefaultBranch(), x.server)
	snap.Settings.FreezeOverride = a.FreezeOverride
	if rec.Kind == records.KindRollback && mergeSHA != "" {
		snap.HeadFrom = fmt.Sprintf("the merge commit of the rollback pull request #%d (the rollback's git_revision %s is the commit it returns to)",
			rec.PRNumber, cmp.Or(rec.GitRevision, "(none)"))
		rec.GitRevision = mergeSHA
	}
	if rec.GitRevision == "" {
		// A release started from the CLI names no commit: the check run
		// goes on the default branch's head as it was at the start, and
		// the status says so.
		b, _, err := gh.Repositories.GetBranch(ctx, owner, name, repo.GetDefaultBranch(), 1)
		if err != nil {
			return fail(fmt.Errorf("head of %s@%s for the rollout check run: %w", rec.Repository, repo.GetDefaultBranch(), err))
		}
		rec.GitRevision = b.GetCommit().GetSHA()
		snap.HeadFrom = fmt.Sprintf("the release has no git_revision: the head of the default branch %s when the rollout started",
			repo.GetDefaultBranch())
	}
	return rec, inst, snap, nil
}

// stopRolledBack aborts the rollout of the release a rollback takes back,
// if it has not ended: its later waves would deploy the release being
// rolled back again. The abort applies on_failure, as any abort does; a
// rollout still queued ends without deploying anything. It says what
// became of that rollout, for the answer to a start.
func (x *executor) stopRolledBack(ctx context.Context, rb records.Record, requester string) (string, error) {
	r, err := rolloutOfRelease(ctx, x.deps.DB.Read, rb.RollbackOf)
	if errors.Is(err, ErrNotFound) {
		return fmt.Sprintf("%s has no rollout to stop", rb.RollbackOf), nil
	}
	if err != nil {
		return "", err
	}
	ended := func(s Status) string {
		return fmt.Sprintf("the rollout %s of %s had ended (%s): nothing was stopped", r.ID, rb.RollbackOf, s)
	}
	if final(r.Machine.Status) { // ended, or failed and rolling back already
		return ended(r.Machine.Status), nil
	}
	by := cmp.Or(strings.TrimPrefix(requester, "@"), "ripcord")
	reason := fmt.Sprintf("release %s is rolled back by %s", rb.RollbackOf, rb.ReleaseID)
	if rb.RollbackReason != "" {
		reason += " (" + rb.RollbackReason + ")"
	}
	_, err = x.markAborted(ctx, r.ID, by, reason, "the rollout stops: "+reason)
	var gone *errEnded
	switch {
	case errors.Is(err, errAbortedAlready):
		return fmt.Sprintf("the rollout %s of %s was stopped before (aborted): nothing more was stopped", r.ID, rb.RollbackOf), nil
	case errors.As(err, &gone):
		return ended(gone.status), nil
	case err != nil:
		return "", err
	}
	return fmt.Sprintf("the rollout %s of %s is stopped: aborted, its on_failure (%s) applies", r.ID, rb.RollbackOf,
		r.Snapshot.Plan.OnFailure), nil
}

// HeadFromRelease is Snapshot.HeadFrom for a check run on the release's
// own commit; otherwise HeadFrom says which branch's head it is.
const HeadFromRelease = "git_revision"

// create stores the rollout of rec running snap, with its first tick.
func (x *executor) create(ctx context.Context, rec records.Record, inst int64, snap Snapshot, author string) (Rollout, error) {
	return x.createOpening(ctx, rec, inst, snap, author, nil)
}

// createOpening is create with open, if set, run first in the same
// transaction: startNew opens the release there.
func (x *executor) createOpening(ctx context.Context, rec records.Record, inst int64, snap Snapshot, author string, open func(*sql.Tx) error) (Rollout, error) {
	if snap.HeadFrom == "" && rec.GitRevision != "" {
		snap.HeadFrom = HeadFromRelease
	}
	r := Rollout{ID: newID(), ReleaseID: rec.ReleaseID, Repository: rec.Repository, InstallationID: inst, App: rec.App,
		Environment: rec.Environment, Version: rec.Image, Author: author, HeadSHA: rec.GitRevision,
		Snapshot: snap, Machine: NewMachine(snap.Plan)}
	if x.beforeCreateTx != nil {
		x.beforeCreateTx(r.ID)
	}
	var created bool
	var queued string
	err := x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		if open != nil {
			if err := open(tx); err != nil {
				return err
			}
		}
		var err error
		if queued, err = x.enqueue(ctx, tx, &r); err != nil {
			return err
		}
		if created, err = insertRollout(ctx, tx, r); err != nil || !created {
			return err
		}
		msg := fmt.Sprintf("rollout of %s %s to %s/%s started: %d stages (%s)", rec.ReleaseID, r.Version, r.App, r.Environment,
			len(snap.Plan.Stages), strings.Join(snap.Plan.StageNames(), ", "))
		if err := insertAudit(ctx, tx, r.ID, r.CreatedAt, "started", msg); err != nil {
			return err
		}
		if queued != "" {
			if err := insertAudit(ctx, tx, r.ID, r.CreatedAt, "paused-queue", waitsFor(queued)); err != nil {
				return err
			}
			// The first tick finds nothing new to show: the queued check run
			// is shown from here.
			if err := queueCheck(ctx, tx, x.deps.River(), r.ID); err != nil {
				return err
			}
		}
		if snap.Settings.FreezeOverride {
			if err := insertAudit(ctx, tx, r.ID, r.CreatedAt, "freeze-override", "freeze_override: freeze windows do not hold this release"); err != nil {
				return err
			}
		}
		return queueTickTx(ctx, tx, x.deps.River(), r.ID)
	})
	if err != nil {
		return Rollout{}, err
	}
	if !created {
		return rolloutOfRelease(ctx, x.deps.DB.Read, rec.ReleaseID)
	}
	return r, nil
}

// enqueue places r, about to be stored in tx, at the end of the rollout
// queue of its app and environment, and returns the rollout ahead of it
// (ahead), if any: a rollout that will wait says so from the start, in
// the answer of POST /api/v1/rollouts too, and its first tick looks again
// (Previous is chosen when it leaves the queue: inputs). The queue is read
// in the transaction that stores r, under the queue's lock (lockQueue):
// read before it, two starts at once each found the other not stored yet,
// and both were told they run while one was to wait behind the other. r is
// created after every unfinished rollout stored, as the queue's order
// (created_at, then id) goes, even within the same microsecond, so that
// its ticks find ahead of it what its start said.
func (x *executor) enqueue(ctx context.Context, tx *sql.Tx, r *Rollout) (string, error) {
	if err := lockQueue(ctx, tx, x.deps.DB.Dialect, r.App, r.Environment); err != nil {
		return "", err
	}
	var newest int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(created_at), 0) FROM rollouts
		WHERE app = $1 AND environment = $2 AND phase <> 'done'`, r.App, r.Environment).Scan(&newest); err != nil {
		return "", fmt.Errorf("rollouts of %s/%s: %w", r.App, r.Environment, err)
	}
	r.CreatedAt = x.deps.Now()
	if after := time.UnixMicro(newest + 1).UTC(); r.CreatedAt.Before(after) {
		r.CreatedAt = after
	}
	queued, err := ahead(ctx, tx, *r)
	if err != nil {
		return "", err
	}
	if x.afterQueueRead != nil {
		x.afterQueueRead(r.ID)
	}
	if queued != "" {
		r.Machine.Status, r.Machine.Paused = PausedQueue, queued
	}
	return queued, nil
}

// previous is the version rollbacks go back to: the newest other release
// of the environment that was healthy once, else the newest other one,
// among the releases that ran and were not rolled back: those records.Record.Ran says ran (facts
// came), and those a rollout of theirs deployed to hosts (a deploy batch
// succeeded), whose deploy workflow may send no facts. One whose pull
// request is not merged, or was closed unmerged, was never deployed, and
// however many of them there are they must not crowd the healthy one out. It is
// chosen when the rollout leaves the queue (inputs), from the records as
// they are then: a rollout ahead of it may have made a newer release healthy
// meanwhile, and going back past that one would undo it on part of the
// hosts.
//
// A rollback release's rollout has none (rollbackNoPrevious): the rule
// would pick the release it rolls back, healthy once before it went bad.
func (x *executor) previous(ctx context.Context, rec records.Record) (string, error) {
	if rec.Kind == records.KindRollback {
		return "", nil
	}
	rs, err := x.deps.Records.NewestRan(ctx, previousRead,
		[]records.Target{{App: rec.App, Environment: rec.Environment, Cluster: rec.Cluster}})
	if err != nil {
		return "", fmt.Errorf("releases before %s: %w", rec.ReleaseID, err)
	}
	deployed, err := x.deployedByRollout(ctx, rec)
	if err != nil {
		return "", err
	}
	rs = append(rs, deployed...)
	slices.SortStableFunc(rs, func(a, b records.Record) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ReleaseID, a.ReleaseID))
	})
	// A release rolled back was found bad by whoever rolled it back, healthy
	// once or not: records say so (rolled-back), or a rollback release that
	// ran names it, though it never became healthy (it failed, or only its
	// rollout deployed it and no fact came), so the release stays as it was.
	rolledBack := map[string]bool{}
	for _, o := range rs {
		if o.Kind == records.KindRollback && o.RollbackOf != "" {
			rolledBack[o.RollbackOf] = true
		}
	}
	fallback := ""
	for _, o := range rs {
		if o.ReleaseID == rec.ReleaseID || o.Kind == records.KindRollback && o.RollbackOf == rec.ReleaseID {
			continue
		}
		if o.State == records.StateRolledBack || o.RolledBackBy != "" || rolledBack[o.ReleaseID] {
			continue
		}
		if o.HealthyAt != nil {
			return o.Image, nil
		}
		if fallback == "" {
			fallback = o.Image
		}
	}
	return fallback, nil
}

// rollbackNoPrevious says why a failed rollout of rollback release rec
// rolls nothing back. The versions the failed stage's hosts ran before it
// are the rollback's own (which just failed) and the release it rolls back
// (the one found bad): going back to that one would deploy it again, and
// any other release is one nobody chose for these hosts. So the hosts stay
// as they are, the rollout fails (its check run and the release say so),
// and a person decides, as after on_failure stop.
func rollbackNoPrevious(rec records.Record) string {
	return fmt.Sprintf("%s is a rollback of %s: its rollout never goes back to the release it rolls back, "+
		"nor to a release nobody chose; the hosts stay as they are", rec.ReleaseID, rec.RollbackOf)
}

// previousRead bounds the releases previous reads of each kind.
const previousRead = 20

// deployedByRollout is the newest releases of rec's target that records
// do not say ran (their state is opened: no fact came) but that a rollout
// of theirs deployed to hosts.
func (x *executor) deployedByRollout(ctx context.Context, rec records.Record) ([]records.Record, error) {
	rows, err := x.deps.DB.Read.QueryContext(ctx, `SELECT r.release_id FROM rollouts r
		WHERE r.app = $1 AND r.environment = $2 AND r.release_id <> $3
		AND EXISTS (SELECT 1 FROM rollout_batches b WHERE b.rollout_id = r.id AND b.kind = $4 AND b.state = $5)
		ORDER BY r.created_at DESC, r.id DESC LIMIT $6`, rec.App, rec.Environment, rec.ReleaseID, KindDeploy, RunSuccess, previousRead)
	if err != nil {
		return nil, fmt.Errorf("releases of %s/%s deployed by a rollout: %w", rec.App, rec.Environment, err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("releases of %s/%s deployed by a rollout: %w", rec.App, rec.Environment, err)
	}
	var out []records.Record
	for _, id := range ids {
		o, err := x.deps.Records.Get(ctx, id)
		if errors.Is(err, records.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("release %s: %w", id, err)
		}
		// The ones that ran are read already (NewestRan).
		if o.Ran() || o.Withdrawn() || !o.SameTarget(rec) {
			continue
		}
		out = append(out, o)
	}
	return out, nil
}

func newID() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return "ro-" + hex.EncodeToString(b[:])
}

// installationOf is the installation that can write to repository.
func installationOf(ctx context.Context, d pipeline.Deps, repository string) (int64, error) {
	id, err := pipeline.InstallationOf(ctx, d.DB.Read, repository)
	switch {
	case err != nil || id != 0:
	case d.App != nil && !d.App().Configured:
		// The server's own setup, not the repository, is what to fix.
		err = &pipeline.NoApp{Repository: repository}
	default:
		err = &notInstalled{pipeline.NotInstalled(d.App, repository)}
	}
	return id, err
}
