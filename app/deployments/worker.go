package deployments

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/ghlimit"
	"github.com/ripcord/ripcord/records"
)

// Worker timings. The lease outlives the job's timeout, so a live job never
// loses it; a dead job's lease runs out and the next job takes over.
const (
	jobTimeout = time.Minute
	leaseFor   = 3 * time.Minute
	leaseWait  = time.Second
)

type syncWorker struct {
	river.WorkerDefaults[SyncArgs]
	d       pipeline.Deps
	api     func(installation int64) (deploymentsAPI, error)
	written *statusCounter
}

func (w *syncWorker) Timeout(*river.Job[SyncArgs]) time.Duration { return jobTimeout }

func (w *syncWorker) Work(ctx context.Context, job *river.Job[SyncArgs]) (err error) {
	a := job.Args
	rec, err := w.d.Records.Get(ctx, a.ReleaseID)
	if errors.Is(err, records.ErrNotFound) {
		return nil // swept: nothing left to show
	}
	if err != nil {
		return fmt.Errorf("load release %s: %w", a.ReleaseID, err)
	}
	if rec.UpdatedAt.UnixMicro() != a.Version {
		return nil // a newer version of the record has its own job
	}
	r, ok, err := acquire(ctx, w.d.DB, a.ReleaseID, job.ID, w.d.Now(), leaseFor)
	if err != nil {
		return err
	}
	if !ok {
		return river.JobSnooze(leaseWait) // another job is writing this release
	}
	defer func() { err = errors.Join(err, release(ctx, w.d.DB, a.ReleaseID, job.ID)) }()
	// Read again under the lease: the job that held it may have written a
	// newer state, and this one must write the state as it is now.
	if rec, err = w.d.Records.Get(ctx, a.ReleaseID); err != nil {
		return fmt.Errorf("load release %s: %w", a.ReleaseID, err)
	}
	err = w.sync(ctx, job.ID, rec, r)
	if snooze := pipeline.LimitSnooze(ctx, w.d, job.Kind, err); snooze != nil {
		return snooze // the lease is let go: the next job may find the limit lifted
	}
	if err != nil && job.Attempt >= job.MaxAttempts && !stops(err) {
		err = errors.Join(err, w.gaveUp(ctx, job, rec, err))
	}
	return err
}

// gaveUp notes, on the job's last attempt, why the release's deployment
// does not show its state, where GET /api/v1/releases/{id}/deployment
// reads it: otherwise the Environments view stays behind the record and
// nothing says why. The record's next change asks GitHub again.
func (w *syncWorker) gaveUp(ctx context.Context, job *river.Job[SyncArgs], rec records.Record, err error) error {
	reason := fmt.Sprintf("ripcord could not write the %s status in %d attempts: %v", StatusOf(rec), job.Attempt, err)
	w.d.Log.Warn("GitHub deployment left behind its release", "release_id", rec.ReleaseID, "reason", reason)
	_, serr := w.d.DB.Write.ExecContext(ctx, `UPDATE deployments SET skipped = $3 WHERE release_id = $1 AND lease_job = $2`,
		rec.ReleaseID, job.ID, clip(reason, 500))
	if serr != nil {
		return fmt.Errorf("note why the deployment of %s is behind: %w", rec.ReleaseID, serr)
	}
	return nil
}

// stops reports an error that ends the job on purpose (a refusal it noted
// already) or puts it off (a snooze), rather than a failure River retries.
func stops(err error) bool {
	var cancel *river.JobCancelError
	var snooze *river.JobSnoozeError
	return errors.As(err, &cancel) || errors.As(err, &snooze)
}

// sync makes GitHub show rec's state, writing each thing at most once: a
// write is noted before it goes out, and a noted write whose answer was
// lost is looked up on GitHub before it is sent again.
func (w *syncWorker) sync(ctx context.Context, job int64, rec records.Record, r row) error {
	want := StatusOf(rec)
	if reason := SkipReason(rec); reason != "" {
		return w.skip(ctx, job, rec, r, reason)
	}
	if r.DeploymentID != 0 && r.PendingState == "" && r.State == want && r.Skipped == "" {
		return nil
	}
	inst, err := pipeline.InstallationOf(ctx, w.d.DB.Read, rec.Repository)
	if err != nil {
		return err
	}
	if inst == 0 {
		return w.skip(ctx, job, rec, r, pipeline.NotInstalled(w.d.App, rec.Repository))
	}
	api, err := w.api(inst)
	if err != nil {
		return fmt.Errorf("github client for installation %d: %w", inst, err)
	}
	r.Repository, r.Skipped = rec.Repository, ""
	repo, q := splitRepo(rec.Repository), DeploymentFor(rec)
	if r.DeploymentID == 0 {
		if err := w.ensureDeployment(ctx, job, api, repo, q, &r); err != nil {
			return err
		}
	}
	if r.PendingState != "" {
		latest, err := latestStatus(ctx, api, repo, r.DeploymentID)
		if err != nil {
			return err
		}
		r.State, r.PendingState = latest, ""
	}
	if r.State == want {
		return save(ctx, w.d.DB, r, job, w.d.Now())
	}
	r.PendingState = want
	if err := save(ctx, w.d.DB, r, job, w.d.Now()); err != nil {
		return err
	}
	url := ReleaseURL(w.d.Config.PublicURL, rec.ReleaseID)
	err = writeStatus(ctx, api, repo, r.DeploymentID, statusWrite{State: want, Description: Description(rec), URL: url, Environment: rec.Environment})
	if msg, ok := refusal(err); ok {
		r.PendingState = "" // refused: GitHub wrote nothing
		return w.refused(ctx, job, r, fmt.Sprintf("GitHub refused the %s status: %s", want, msg), err)
	}
	if err != nil {
		return err
	}
	w.written.inc(want)
	r.State, r.PendingState = want, ""
	return save(ctx, w.d.DB, r, job, w.d.Now())
}

// ensureDeployment finds the deployment an earlier attempt may have made,
// or creates it.
func (w *syncWorker) ensureDeployment(ctx context.Context, job int64, api deploymentsAPI, repo repoRef, q Request, r *row) error {
	if r.CreateSent {
		id, err := findDeployment(ctx, api, repo, q)
		if err != nil {
			return err
		}
		r.DeploymentID = id
	}
	if r.DeploymentID == 0 {
		r.CreateSent = true
		if err := save(ctx, w.d.DB, *r, job, w.d.Now()); err != nil {
			return err
		}
		id, err := createDeployment(ctx, api, repo, q)
		if msg, ok := refusal(err); ok {
			r.CreateSent = false // refused: nothing was created
			return w.refused(ctx, job, *r, "GitHub refused the deployment: "+msg, err)
		}
		if err != nil {
			return err
		}
		r.DeploymentID = id
	}
	r.CreateSent = false
	return save(ctx, w.d.DB, *r, job, w.d.Now())
}

// skip notes why rec has no deployment, logging it when the reason is new.
func (w *syncWorker) skip(ctx context.Context, job int64, rec records.Record, r row, reason string) error {
	if r.Skipped == reason {
		return nil
	}
	w.d.Log.Info("no GitHub deployment for this release", "release_id", rec.ReleaseID, "reason", reason)
	r.Repository, r.Skipped = rec.Repository, reason
	return save(ctx, w.d.DB, r, job, w.d.Now())
}

// refused notes a write GitHub refused as the reason the release shows no
// (up-to-date) deployment, and ends the job: asking again would get the
// same answer for weeks of retries. The record's next change asks again.
func (w *syncWorker) refused(ctx context.Context, job int64, r row, reason string, err error) error {
	w.d.Log.Warn("GitHub refused a deployment write", "release_id", r.ReleaseID, "reason", reason)
	r.Skipped = reason
	if serr := save(ctx, w.d.DB, r, job, w.d.Now()); serr != nil {
		return serr
	}
	return river.JobCancel(err)
}

// refusal is GitHub's message when err is its 4xx answer (a rate limit's
// 429 or 403 aside, which the job waits out): the request itself is wrong
// for GitHub.
func refusal(err error) (string, bool) {
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil || ghlimit.Limited(err) {
		return "", false
	}
	if code := er.Response.StatusCode; code < 400 || code >= 500 || code == http.StatusTooManyRequests {
		return "", false
	}
	msg := er.Message
	if msg == "" {
		msg = er.Response.Status
	}
	return fmt.Sprintf("HTTP %d %s", er.Response.StatusCode, msg), true
}
