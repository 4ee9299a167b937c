package recoveryflow

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/records"
)

// AlertArgs opens or updates the alert issue of an episode's alert decision.
// The run and attempt are the idempotency key.
type AlertArgs struct {
	Repository     string `json:"repository" river:"unique"`
	RunID          int64  `json:"run_id" river:"unique"`
	Attempt        int    `json:"attempt" river:"unique"`
	InstallationID int64  `json:"installation_id"`
}

// Kind names the job in the queue.
func (AlertArgs) Kind() string { return "recovery_alert" }

type alertWorker struct {
	river.WorkerDefaults[AlertArgs]
	f *flow
}

func (w *alertWorker) Timeout(*river.Job[AlertArgs]) time.Duration { return jobTimeout }

// Work keeps one issue per alert key (release): it opens it, or updates and
// reopens it when the release fails again. Creation is claimed in
// recovery_issues first, like the check run's.
// GitHub's rate limit is waited out (pipeline.LimitSnooze), counting no
// attempt.
func (w *alertWorker) Work(ctx context.Context, job *river.Job[AlertArgs]) error {
	err := w.work(ctx, job)
	if snooze := pipeline.LimitSnooze(ctx, w.f.deps, job.Kind, err); snooze != nil {
		return snooze
	}
	return err
}

func (w *alertWorker) work(ctx context.Context, job *river.Job[AlertArgs]) error {
	a, f := job.Args, w.f
	ep, ok, err := getEpisode(ctx, f.deps.DB.Write, a.Repository, a.RunID)
	if err != nil || !ok || ep.State != StateAlerted || ep.RunAttempt != a.Attempt {
		return err // moved on (recovered by hand): no issue for a settled alert
	}
	// One issue shows the newest alert of its key (release): the job of an
	// older one that runs late (retried) leaves it to the newer one's, and
	// does not reopen an issue a person closed since.
	if newest, err := newestAlert(ctx, f.deps.DB.Write, ep); err != nil || !sameAlert(newest, ep) {
		return err
	}
	gh, err := f.deps.GitHub.NewInstallationClient(a.InstallationID)
	if err != nil {
		return fmt.Errorf("github client for installation %d: %w", a.InstallationID, err)
	}
	// A newer alert of the key can come while this job writes, and its job
	// can write first: GitHub keeps the last edit. So the job reads the
	// newest alert again after writing, and writes it while it is another.
	for range maxRewrites {
		if err := w.write(ctx, gh, job, ep); err != nil {
			return err
		}
		newest, err := newestAlert(ctx, f.deps.DB.Write, ep)
		if err != nil || sameAlert(newest, ep) {
			return err
		}
		ep = newest
	}
	return nil
}

// maxRewrites bounds the writes of one job that finds a newer state after
// each: the newest one's own job writes too.
const maxRewrites = 5

// newestAlert is the alerted episode of ep's alert key that changed last
// (ep itself, for an episode whose key is its run).
func newestAlert(ctx context.Context, q querier, ep Episode) (Episode, error) {
	if ep.ReleaseID == "" {
		return ep, nil
	}
	newest, ok, err := scanEpisode(q.QueryRowContext(ctx, `SELECT `+episodeColumns+` FROM episodes
		WHERE repository = $1 AND release_id = $2 AND state = $3 ORDER BY updated_at DESC, run_id DESC LIMIT 1`,
		ep.Repository, ep.ReleaseID, string(StateAlerted)))
	if err != nil || !ok {
		return ep, err
	}
	return newest, nil
}

func sameAlert(a, b Episode) bool { return a.RunID == b.RunID && a.Seq == b.Seq }

// write opens ep's alert issue, or updates and reopens it.
func (w *alertWorker) write(ctx context.Context, gh *github.Client, job *river.Job[AlertArgs], ep Episode) error {
	f := w.f
	story, err := f.deps.Records.Audit(ctx, records.AuditFilter{ReleaseID: ep.AlertKey(), Oldest: true, Limit: maxStoryEvents})
	if err != nil {
		return fmt.Errorf("story of %s: %w", ep.AlertKey(), err)
	}
	title, body := RenderIssue(ep, story)
	owner, repo, _ := strings.Cut(ep.Repository, "/")
	number, claimed, inherited, err := f.claimIssue(ctx, ep, job.ID)
	switch {
	case err != nil:
		return err
	case number == 0 && !claimed:
		return river.JobSnooze(claimWait)
	case number == 0 && (job.Attempt > 1 || inherited):
		if number, err = findIssue(ctx, gh, owner, repo, ep.AlertKey()); err != nil {
			return err
		}
	}
	if number == 0 {
		labels := []string{IssueLabel}
		is, _, err := gh.Issues.Create(ctx, owner, repo, &github.IssueRequest{Title: &title, Body: &body, Labels: &labels})
		if err != nil {
			return fmt.Errorf("open alert issue for %s: %w", ep.AlertKey(), err)
		}
		f.metrics.effects.WithLabelValues("issue", "done").Inc()
		return f.storeIssue(ctx, ep, is.GetNumber())
	}
	open := "open"
	if _, _, err := gh.Issues.Edit(ghclient.Idempotent(ctx), owner, repo, number, &github.IssueRequest{Title: &title, Body: &body, State: &open}); err != nil {
		return fmt.Errorf("update alert issue #%d for %s: %w", number, ep.AlertKey(), err)
	}
	f.metrics.effects.WithLabelValues("issue", "done").Inc()
	return f.storeIssue(ctx, ep, number)
}

// claimIssue returns the issue number stored for the episode's alert key,
// or claims its creation for job. A claim whose job is gone (River gave up
// on it) is taken over, inherited: that job may have opened the issue.
func (f *flow) claimIssue(ctx context.Context, ep Episode, job int64) (number int, claimed, inherited bool, err error) {
	number, claim, err := f.readIssueClaim(ctx, ep, job)
	if err != nil || number != 0 || claim == job {
		return number, claim == job, false, err
	}
	if gone, err := f.deps.JobGone(ctx, claim); err != nil || !gone {
		return 0, false, false, err
	}
	res, err := f.deps.DB.Write.ExecContext(ctx, `UPDATE recovery_issues SET claim = $4
		WHERE repository = $1 AND alert_key = $2 AND claim = $3 AND issue_number = 0`, ep.Repository, ep.AlertKey(), claim, job)
	if err != nil {
		return 0, false, false, fmt.Errorf("take over the alert issue of %s: %w", ep.AlertKey(), err)
	}
	n, err := res.RowsAffected()
	return 0, err == nil && n == 1, true, nil
}

// readIssueClaim inserts job's claim unless there is one, and reads the
// issue number and the claim stored.
func (f *flow) readIssueClaim(ctx context.Context, ep Episode, job int64) (int, int64, error) {
	db := f.deps.DB.Write
	if _, err := db.ExecContext(ctx, `INSERT INTO recovery_issues (repository, alert_key, claim, created_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (repository, alert_key) DO NOTHING`, ep.Repository, ep.AlertKey(), job, store.Micros(f.deps.Now())); err != nil {
		return 0, 0, fmt.Errorf("claim the alert issue of %s: %w", ep.AlertKey(), err)
	}
	var number int
	var claim int64
	if err := db.QueryRowContext(ctx, `SELECT issue_number, claim FROM recovery_issues WHERE repository = $1 AND alert_key = $2`,
		ep.Repository, ep.AlertKey()).Scan(&number, &claim); err != nil {
		return 0, 0, fmt.Errorf("read the alert issue of %s: %w", ep.AlertKey(), err)
	}
	return number, claim, nil
}

func (f *flow) storeIssue(ctx context.Context, ep Episode, number int) error {
	_, err := f.deps.DB.Write.ExecContext(ctx, `UPDATE recovery_issues SET issue_number = $3 WHERE repository = $1 AND alert_key = $2`,
		ep.Repository, ep.AlertKey(), number)
	if err != nil {
		return fmt.Errorf("store alert issue #%d of %s: %w", number, ep.AlertKey(), err)
	}
	return nil
}

// findIssue looks for the open alert issue of key by its marker.
func findIssue(ctx context.Context, gh *github.Client, owner, repo, key string) (int, error) {
	issues, _, err := gh.Issues.ListByRepo(ctx, owner, repo, &github.IssueListByRepoOptions{Labels: []string{IssueLabel}, State: "all",
		ListOptions: github.ListOptions{PerPage: 100}})
	if err != nil {
		return 0, fmt.Errorf("look for the alert issue of %s: %w", key, err)
	}
	for _, is := range issues {
		if strings.Contains(is.GetBody(), issueMarker(key)) {
			return is.GetNumber(), nil
		}
	}
	return 0, nil
}
