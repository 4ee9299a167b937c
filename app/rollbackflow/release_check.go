package rollbackflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/eligibility"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/rollbackpr"
)

// ReleaseCheckName is the check run on each release's commit that shows its
// state and, when a rollback makes sense, offers the Roll back button.
const ReleaseCheckName = "ripcord/release"

// RollbackAction is the button's identifier (GitHub allows 20 characters).
const RollbackAction = "rollback"

// ReleaseCheckArgs writes a release's check run. Version is the record's
// updated_at: only the job for the record's current version acts, so an
// older job that runs late never overwrites a newer state, and River's
// uniqueness drops exact repeats. Note is an answer to a click, shown in the
// check run's text.
type ReleaseCheckArgs struct {
	ReleaseID string `json:"release_id" river:"unique"`
	Version   int64  `json:"version" river:"unique"`
	Note      string `json:"note,omitempty" river:"unique"`
}

// Kind names the job in the queue.
func (ReleaseCheckArgs) Kind() string { return "release_check" }

// QueueReleaseChecks queues the check-run update of every record that can
// carry one (a repository and a commit), in the caller's transaction.
func QueueReleaseChecks(ctx context.Context, tx *sql.Tx, rc *river.Client[*sql.Tx], recs []records.Record) error {
	var jobs []river.InsertManyParams
	for _, r := range recs {
		if r.Repository == "" || !revisionOK(r.GitRevision) {
			continue
		}
		jobs = append(jobs, river.InsertManyParams{Args: ReleaseCheckArgs{ReleaseID: r.ReleaseID, Version: r.UpdatedAt.UnixMicro()},
			InsertOpts: &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}})
	}
	if len(jobs) == 0 {
		return nil
	}
	if _, err := rc.InsertManyTx(ctx, tx, jobs); err != nil {
		return fmt.Errorf("queue %d release check runs: %w", len(jobs), err)
	}
	return nil
}

// queueNote queues the job that shows a.Note in the release's check run,
// keeping the note as the release's newest in the same transaction: the
// job of an earlier note that runs (or is retried) after a later one's
// shows the later note too, instead of putting the earlier text back
// ("opening the pull request…" over its link).
func queueNote(ctx context.Context, tx *sql.Tx, rc *river.Client[*sql.Tx], a ReleaseCheckArgs) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO release_check_notes (release_id, note) VALUES ($1, $2)
		ON CONFLICT (release_id) DO UPDATE SET note = excluded.note`, a.ReleaseID, a.Note); err != nil {
		return fmt.Errorf("keep the check run note of %s: %w", a.ReleaseID, err)
	}
	_, err := rc.InsertTx(ctx, tx, a, &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}})
	return err
}

// newestNote is the release's newest note (queueNote), or note when none is
// kept (a job queued before notes were).
func newestNote(ctx context.Context, db *sql.DB, releaseID, note string) (string, error) {
	var kept string
	err := db.QueryRowContext(ctx, `SELECT note FROM release_check_notes WHERE release_id = $1`, releaseID).Scan(&kept)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return note, nil
	case err != nil:
		return "", fmt.Errorf("read the check run note of %s: %w", releaseID, err)
	}
	return kept, nil
}

// CheckView is what a release's check run says.
type CheckView struct {
	Status, Conclusion, Title, Summary string
	Actions                            []*github.CheckRunAction
}

// RenderReleaseCheck is pure: the record, the rollback target the records
// offer (nil: none), its eligibility answer, and an optional note.
func RenderReleaseCheck(r records.Record, target *records.Record, ans eligibility.Answer, note string) CheckView {
	v := CheckView{Status: "completed", Conclusion: "neutral"}
	switch {
	case r.Withdrawn():
		v.Conclusion = "cancelled"
		v.Title = fmt.Sprintf("%s %s: closed without merging", r.App, r.Environment)
	default:
		v = renderState(r, v)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Release `%s` of **%s** in **%s** (cluster `%s`) is **%s**.\n\n", r.ReleaseID, r.App, r.Environment, r.Cluster, r.State)
	if r.Withdrawn() {
		b.WriteString("Its pull request was closed without merging, so it never ran and never will.\n\n")
	}
	fmt.Fprintf(&b, "| | |\n|---|---|\n| image | `%s` |\n| kind | %s |\n", r.Image, r.Kind)
	if r.HealthyAt != nil {
		fmt.Fprintf(&b, "| healthy at | %s |\n", r.HealthyAt.UTC().Format(time.RFC3339))
	}
	if r.RollbackOf != "" {
		fmt.Fprintf(&b, "| rolls back | `%s` (%s) |\n", r.RollbackOf, r.RollbackReason)
	}
	if r.RolledBackBy != "" {
		fmt.Fprintf(&b, "| rolled back by | `%s` |\n", r.RolledBackBy)
	}
	// A withdrawn release never ran: there is nothing of it to roll back.
	live := v.Status == "completed" && r.Open() && !r.Withdrawn()
	switch {
	case live && target != nil:
		fmt.Fprintf(&b, "\n**Roll back** opens a rollback pull request to `%s` (`%s`, %s): %s\n",
			target.ReleaseID, rollbackpr.ShortSHA(target.GitRevision), target.Image, ans.Reason)
		v.Actions = []*github.CheckRunAction{{Label: "Roll back", Identifier: RollbackAction,
			Description: clip("to "+rollbackpr.ShortSHA(target.GitRevision)+" ("+target.ReleaseID+")", 40)}}
	case live:
		b.WriteString("\nNo eligible rollback target: no earlier release of this app, environment and cluster reached healthy among the newest ones.\n")
	}
	if note != "" {
		fmt.Fprintf(&b, "\n> %s\n", strings.ReplaceAll(note, "\n", " "))
	}
	v.Summary = b.String()
	return v
}

// renderState is the status and title of a release by its state.
func renderState(r records.Record, v CheckView) CheckView {
	switch r.State {
	case records.StateOpened, records.StateProgressing, records.StatePaused:
		v.Status, v.Conclusion = "in_progress", ""
		v.Title = fmt.Sprintf("%s %s: %s", r.App, r.Environment, r.State)
	case records.StateHealthy:
		v.Title = fmt.Sprintf("%s %s: healthy", r.App, r.Environment)
	case records.StateDegraded, records.StateAborted, records.StateFailed:
		v.Conclusion = "action_required"
		v.Title = fmt.Sprintf("%s %s: %s", r.App, r.Environment, r.State)
	default: // superseded, rolled-back
		v.Title = fmt.Sprintf("%s %s: %s", r.App, r.Environment, r.State)
	}
	return v
}

func clip(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

type releaseCheckWorker struct {
	river.WorkerDefaults[ReleaseCheckArgs]
	deps pipeline.Deps
}

func (w *releaseCheckWorker) Timeout(*river.Job[ReleaseCheckArgs]) time.Duration { return jobTimeout }

func (w *releaseCheckWorker) Work(ctx context.Context, job *river.Job[ReleaseCheckArgs]) error {
	a, d := job.Args, w.deps
	r, err := d.Records.Get(ctx, a.ReleaseID)
	if errors.Is(err, records.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if a.Note == "" && r.UpdatedAt.UnixMicro() != a.Version {
		return nil // a newer state has its own job
	}
	inst, err := installationOf(ctx, d, r.Repository)
	if err != nil {
		return river.JobCancel(err)
	}
	gh, err := d.GitHub.NewInstallationClient(inst)
	if err != nil {
		return fmt.Errorf("github client for installation %d: %w", inst, err)
	}
	// Creations are claimed (pipeline.Deps.Claim): each change of a
	// release queues a job, River runs them side by side, and two that
	// found no run on GitHub would each create one, the one not found again
	// staying as first written for good.
	claim := func(ctx context.Context) (func(), bool, error) {
		return d.Claim(ctx, "release-check "+r.ReleaseID, job.ID)
	}
	// The release can change while this job writes, and the job of the
	// newer state (or a newer note) can write first: GitHub keeps the last
	// write, which would show the older state, button and answered clicks
	// for good. So the job reads the release again after writing, and
	// writes again while what it shows has changed (at most maxRewrites
	// times: the newest change's own job writes too).
	for range maxRewrites {
		v, externalID, err := w.render(ctx, r, a.Note)
		if err != nil {
			return err
		}
		if err := writeReleaseCheck(ctx, gh, d.App().ID, r, externalID, v, d.Now(), claim); err != nil {
			return err
		}
		if r, err = d.Records.Get(ctx, a.ReleaseID); errors.Is(err, records.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		now, nowID, err := w.render(ctx, r, a.Note)
		if err != nil || nowID == externalID && reflect.DeepEqual(now, v) {
			return err
		}
	}
	return nil
}

// maxRewrites bounds the writes of one job that finds the release changed
// after each.
const maxRewrites = 5

// render is r's check run as this job shows it: with the newest note when
// the job answers a click (note), and the external id naming the clicks
// answered so far.
func (w *releaseCheckWorker) render(ctx context.Context, r records.Record, note string) (CheckView, string, error) {
	d := w.deps
	target, ans, err := w.target(ctx, r)
	if err != nil {
		return CheckView{}, "", err
	}
	if note != "" {
		if note, err = newestNote(ctx, d.DB.Read, r.ReleaseID, note); err != nil {
			return CheckView{}, "", err
		}
	}
	// Read after the note: the answer that wrote it is counted with it.
	answered, err := clicksAnswered(ctx, d.DB.Read, r.ReleaseID)
	if err != nil {
		return CheckView{}, "", err
	}
	return RenderReleaseCheck(r, target, ans, note), releaseCheckExternalID(r.ReleaseID, answered), nil
}

// claimWait is how long a job waits while another job of the same release
// creates its check run.
const claimWait = time.Second

// target is the rollback the records offer for r: the newest eligible
// release before it, within the repository's eligibility window.
func (w *releaseCheckWorker) target(ctx context.Context, r records.Record) (*records.Record, eligibility.Answer, error) {
	window := windowOf(w.deps.Configs, r.Repository)
	// The target's newest releases that ran: opened ones take no place in
	// the window, so however many there are they must not crowd it out.
	// ReadAhead more let the reason say why an older one does not count.
	newest, err := w.deps.Records.NewestRan(ctx, window+eligibility.ReadAhead,
		[]records.Target{{App: r.App, Environment: r.Environment, Cluster: r.Cluster}})
	if err != nil {
		return nil, eligibility.Answer{}, err
	}
	if r.State == records.StateOpened {
		// Not among the releases that ran, but SelectTarget starts from it.
		newest = append(newest, r)
	}
	t, ans := eligibility.SelectTarget(newest, r.ReleaseID, window)
	if !ans.Eligible || t.ReleaseID == "" || !revisionOK(t.GitRevision) {
		return nil, ans, nil
	}
	return &t, ans, nil
}

// windowOf is repository's eligibility window: its eligibility.window as
// ripcord last read its .github/ripcord.yml from the default branch (see
// pipeline.RepoConfigs; a check run is written without reading GitHub for
// it), or eligibility.DefaultWindow while none is kept (never read,
// missing, or not loading), as on the releases pages.
func windowOf(configs *pipeline.RepoConfigs, repository string) int {
	if cfg, ok := configs.Get(repository); ok && cfg.Eligibility.Window > 0 {
		return cfg.Eligibility.Window
	}
	return eligibility.DefaultWindow
}

// writeReleaseCheck updates the release's check run, found by the release
// id its external id starts with (releaseCheckExternalID; a run written
// before the external id counted answers carries the release id alone), or
// creates it: a retry after a crash finds the run it made. The run is
// given externalID, which names the answers its button was shown after.
// Only a run this App (appID) made is the release's: a workflow's token or
// another App can make one of the same name and external id (release ids
// are easy to guess), and GitHub refuses every update of it, so taking it
// would leave the release without its check run and Roll back button for
// good. Before creating a run it takes claim (nil: the caller is the only
// writer) and looks again while it holds it.
func writeReleaseCheck(ctx context.Context, gh *github.Client, appID int64, r records.Record, externalID string, v CheckView, now time.Time,
	claim func(context.Context) (release func(), held bool, err error)) error {
	owner, repo, _ := strings.Cut(r.Repository, "/")
	out := &github.CheckRunOutput{Title: &v.Title, Summary: &v.Summary}
	ts := github.Timestamp{Time: now}
	id, err := findReleaseCheck(ctx, gh, appID, r)
	if err != nil {
		return err
	}
	if id == 0 && claim != nil {
		release, held, err := claim(ctx)
		if err != nil {
			return err
		}
		if !held {
			return river.JobSnooze(claimWait)
		}
		defer release()
		if id, err = findReleaseCheck(ctx, gh, appID, r); err != nil { // one made while the claim was another's
			return err
		}
	}
	if id != 0 {
		opts := github.UpdateCheckRunOptions{Name: ReleaseCheckName, ExternalID: &externalID, Status: &v.Status, Output: out, Actions: v.Actions}
		if v.Status == "completed" {
			opts.Conclusion, opts.CompletedAt = &v.Conclusion, &ts
		}
		if _, _, err := gh.Checks.UpdateCheckRun(ghclient.Idempotent(ctx), owner, repo, id, opts); err != nil {
			return fmt.Errorf("update %s of %s: %w", ReleaseCheckName, r.ReleaseID, err)
		}
		return nil
	}
	opts := github.CreateCheckRunOptions{Name: ReleaseCheckName, HeadSHA: r.GitRevision, ExternalID: &externalID,
		Status: &v.Status, StartedAt: &ts, Output: out, Actions: v.Actions}
	if v.Status == "completed" {
		opts.Conclusion, opts.CompletedAt = &v.Conclusion, &ts
	}
	if _, _, err := gh.Checks.CreateCheckRun(ctx, owner, repo, opts); err != nil {
		return fmt.Errorf("create %s of %s: %w", ReleaseCheckName, r.ReleaseID, err)
	}
	return nil
}

// findReleaseCheck is the id of r's check run this App made (0: none).
func findReleaseCheck(ctx context.Context, gh *github.Client, appID int64, r records.Record) (int64, error) {
	owner, repo, _ := strings.Cut(r.Repository, "/")
	name, all := ReleaseCheckName, "all"
	list, _, err := gh.Checks.ListCheckRunsForRef(ctx, owner, repo, r.GitRevision, &github.ListCheckRunsOptions{
		CheckName: &name, Filter: &all, AppID: &appID, ListOptions: github.ListOptions{PerPage: 100}})
	if err != nil {
		return 0, fmt.Errorf("look for %s of %s: %w", ReleaseCheckName, r.ReleaseID, err)
	}
	for _, cr := range list.CheckRuns {
		if id, _ := splitReleaseCheckExternalID(cr.GetExternalID()); id != r.ReleaseID && cr.GetExternalID() != r.ReleaseID ||
			cr.GetApp().GetID() != appID {
			continue
		}
		return cr.GetID(), nil
	}
	return 0, nil
}
