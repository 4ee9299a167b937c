package recoveryflow

import (
	"fmt"
	"strings"
	"time"

	"github.com/ripcord/ripcord/recovery"
	"github.com/ripcord/ripcord/repoconfig"
)

// State is where a recovery episode stands.
type State string

// Episode states. A new failure of a later attempt may move any state on;
// recovered is the only one a failure never reaches.
const (
	StateRetryScheduled State = "retry_scheduled" // a re-run is queued for NextRetryAt
	StateRetrying       State = "retrying"        // GitHub accepted the re-run; its outcome is awaited
	StateRollingBack    State = "rolling_back"    // the rollback was handed to the environment's executor
	StateRolledBack     State = "rolled_back"     // the rollback run succeeded, or the rollback release became healthy
	StateSkipped        State = "skipped"         // another version runs: nothing to roll back
	StateAlerted        State = "alerted"         // a human has to act
	StateRecovered      State = "recovered"       // a later attempt of the run succeeded
	StateStopped        State = "stopped"         // the attempt awaited was cancelled: ripcord waits no more
)

// Episode is the recovery of one workflow run: one row of the episodes
// table, unique per (repository, run id).
type Episode struct {
	Repository     string
	RunID          int64
	InstallationID int64
	Workflow       string // the run's workflow path, .github/workflows/deploy.yml
	HeadSHA        string
	App            string
	Environment    string
	Cluster        string
	ReleaseID      string // the failed release, "" when the run posted no task fact
	RunAttempt     int    // the newest attempt this episode has handled
	RetryCount     int    // failures so far, this one included
	State          State
	Decision       recovery.Decision
	Context        Context
	CheckRunID     int64
	NextRetryAt    *time.Time
	RollbackRunID  int64
	// RollbackReleaseID is the release a pull-request or kubernetes
	// rollback opened: its record says how the rollback ends.
	RollbackReleaseID string
	// Seq counts the episode's changes; a write succeeds only over the Seq
	// it read, and a check-run job renders only the Seq it was queued for.
	Seq       int
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Context is what a decision rested on, kept with it so the check run and
// the alert can say why, and so a scheduled re-run can decide again at the
// time it fires.
type Context struct {
	Input             recovery.Input `json:"input"`
	Conclusion        string         `json:"conclusion"`
	FailureTypeSource string         `json:"failure_type_source"` // fact, jobs or none
	FailedJobs        []string       `json:"failed_jobs,omitempty"`
	Config            Applied        `json:"config"`
	LiveReleaseID     string         `json:"live_release_id,omitempty"`
	// Note adds what the decision could not know, e.g. an ambiguous environment.
	Note string `json:"note,omitempty"`
	// RerunByHand is the attempt a person started before the scheduled
	// retry fell due, still running when it did: the episode waits for it.
	RerunByHand int `json:"rerun_by_hand,omitempty"`
	// LimitWait is the wait for GitHub's rate limit of the job carrying
	// out the decision (Episode.limitWait says whether it is this one's).
	LimitWait *LimitWait `json:"limit_wait,omitempty"`
}

// Applied is the configuration a decision applied, as the check run shows it.
type Applied struct {
	Source       string          `json:"source"` // repo:path@ref
	Policy       recovery.Policy `json:"policy"`
	RollbackMode string          `json:"rollback_mode,omitempty"`
	// Rollback is the environment's rollback section, for the executor.
	Rollback repoconfig.Rollback `json:"rollback"`
	Window   int                 `json:"eligibility_window"`
}

// AlertKey is what one alert issue is kept under: the failed release, or
// the run when the release is unknown. It also names the episode's audit
// events, so filtering by it tells the whole story.
func (e Episode) AlertKey() string {
	if e.ReleaseID != "" {
		return e.ReleaseID
	}
	return RunKey(e.Repository, e.RunID)
}

// stateFor is the state a decision leaves an episode in.
func stateFor(d recovery.Decision) State {
	switch d.Action {
	case recovery.ActionRetry:
		return StateRetryScheduled
	case recovery.ActionRollback:
		return StateRollingBack
	case recovery.ActionSkip:
		return StateSkipped
	}
	return StateAlerted
}

// Failure is a failed attempt as decided.
type Failure struct {
	Attempt  int
	Decision recovery.Decision
	Context  Context
	At       time.Time
}

// Fail applies a failed attempt. It refuses an attempt the episode has
// already handled (a redelivery, or an older attempt arriving late), so a
// failure is decided at most once. e is the zero Episode for a new one; the
// caller sets the run's identity on it first.
func (e Episode) Fail(f Failure) (Episode, bool) {
	if e.Seq > 0 && f.Attempt <= e.RunAttempt {
		return e, false
	}
	if e.Seq == 0 {
		e.CreatedAt = f.At
	}
	e.RunAttempt, e.RetryCount = f.Attempt, f.Decision.Attempt
	e.Decision, e.Context = f.Decision, f.Context
	e.State = stateFor(f.Decision)
	// A new decision: the run or the release an earlier rollback started is
	// not this one's. A rollback run left set would make the dispatch of
	// this decision's rollback look done already (dispatchWorker), and the
	// earlier run's outcome would end this decision.
	e.NextRetryAt, e.RollbackRunID, e.RollbackReleaseID = nil, 0, ""
	if f.Decision.Action == recovery.ActionRetry {
		at := f.Decision.RetryAt
		e.NextRetryAt = &at
	}
	return e.bump(f.At), true
}

// NextRetryCount is the retry_count of the next failure: seed 000 counts
// before deciding.
func (e Episode) NextRetryCount() int { return e.RetryCount + 1 }

// Succeed closes the episode when attempt (the newest handled or a later
// one) succeeded.
func (e Episode) Succeed(attempt int, at time.Time) (Episode, bool) {
	if e.Seq == 0 || e.State == StateRecovered || attempt < e.RunAttempt {
		return e, false
	}
	e.RunAttempt, e.State, e.NextRetryAt = attempt, StateRecovered, nil
	return e.bump(at), true
}

// Stop ends the wait for a retry when a later attempt ended neither in
// success nor in failure (a person cancelled it): ripcord does nothing more
// unless another attempt fails. note says what happened.
func (e Episode) Stop(attempt int, note string, at time.Time) (Episode, bool) {
	if (e.State != StateRetrying && e.State != StateRetryScheduled) || attempt <= e.RunAttempt {
		return e, false
	}
	e.RunAttempt, e.State, e.NextRetryAt = attempt, StateStopped, nil
	e.Context.Note = strings.TrimSpace(e.Context.Note + " " + note)
	return e.bump(at), true
}

// RerunRequested records that GitHub accepted the scheduled re-run of attempt.
func (e Episode) RerunRequested(attempt int, at time.Time) (Episode, bool) {
	if e.State != StateRetryScheduled || e.RunAttempt != attempt {
		return e, false
	}
	e.State, e.NextRetryAt = StateRetrying, nil
	return e.bump(at), true
}

// WaitForRerun gives up the scheduled retry of attempt when the run was
// re-run meanwhile (by a person) and attempt running is still running: that
// attempt's outcome, as its workflow_run delivery reports it, decides.
func (e Episode) WaitForRerun(attempt, running int, at time.Time) (Episode, bool) {
	if e.State != StateRetryScheduled || e.RunAttempt != attempt || running <= attempt {
		return e, false
	}
	e.State, e.NextRetryAt, e.Context.RerunByHand = StateRetrying, nil, running
	e.Context.Note = strings.TrimSpace(e.Context.Note + " " + fmt.Sprintf(
		"Retry %d was due, but a person had re-run the run already: ripcord waits for attempt %d instead.", e.Decision.Attempt, running))
	return e.bump(at), true
}

// Redecide replaces a scheduled retry that cannot happen any more (GitHub's
// limits were reached by the time it fired, or GitHub refused it) with the
// decision that follows.
func (e Episode) Redecide(attempt int, d recovery.Decision, at time.Time) (Episode, bool) {
	if e.State != StateRetryScheduled || e.RunAttempt != attempt || d.Action == recovery.ActionRetry {
		return e, false
	}
	e.Decision, e.State, e.NextRetryAt = d, stateFor(d), nil
	return e.bump(at), true
}

// RollbackDispatched records the run a workflow rollback started.
func (e Episode) RollbackDispatched(attempt int, runID int64, at time.Time) (Episode, bool) {
	if e.State != StateRollingBack || e.RunAttempt != attempt || e.RollbackRunID > 0 || runID <= 0 {
		return e, false
	}
	e.RollbackRunID = runID
	return e.bump(at), true
}

// RollbackFailed replaces the rollback of attempt that did not happen
// (GitHub refused the dispatch, or the rollback run failed) with the alert d:
// seed 000's rollback_failed, then a human decides.
func (e Episode) RollbackFailed(attempt int, d recovery.Decision, at time.Time) (Episode, bool) {
	if e.State != StateRollingBack || e.RunAttempt != attempt || d.Action != recovery.ActionAlert {
		return e, false
	}
	e.Decision, e.State, e.NextRetryAt = d, StateAlerted, nil
	return e.bump(at), true
}

// RollbackOpened records the release a pull-request or kubernetes rollback
// of attempt opened.
func (e Episode) RollbackOpened(attempt int, releaseID string, at time.Time) (Episode, bool) {
	if e.State != StateRollingBack || e.RunAttempt != attempt || e.RollbackReleaseID != "" || releaseID == "" {
		return e, false
	}
	e.RollbackReleaseID = releaseID
	return e.bump(at), true
}

// RolledBack closes the episode when its rollback run succeeded or its
// rollback release became healthy, also when that had failed first (the run
// was re-run by hand; the release stalled, then got its facts).
func (e Episode) RolledBack(at time.Time) (Episode, bool) {
	failedFirst := e.State == StateAlerted && e.Decision.Rule == RuleRollbackFailed
	if (e.State != StateRollingBack && !failedFirst) || (e.RollbackRunID <= 0 && e.RollbackReleaseID == "") {
		return e, false
	}
	e.State = StateRolledBack
	return e.bump(at), true
}

func (e Episode) bump(at time.Time) Episode {
	e.Seq++
	e.UpdatedAt = at
	return e
}
