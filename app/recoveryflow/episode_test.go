package recoveryflow

import (
	"testing"
	"time"

	"github.com/ripcord/ripcord/recovery"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func failure(attempt, count int, action recovery.Action) Failure {
	return Failure{Attempt: attempt, At: t0, Decision: recovery.Decision{Action: action, Attempt: count, RetryAt: t0.Add(10 * time.Second)}}
}

// episodeIn returns a stored episode in state s at attempt 1.
func episodeIn(s State) Episode {
	return Episode{Repository: "acme/checkout", RunID: 7, RunAttempt: 1, RetryCount: 1, State: s, Seq: 3}
}

func TestEpisodeTransitions(t *testing.T) {
	t.Parallel()
	type step func(Episode) (Episode, bool)
	cases := []struct {
		name    string
		from    Episode
		step    step
		ok      bool
		state   State
		attempt int
		nextSeq int
		checkFn func(t *testing.T, e Episode)
	}{
		{"a first failure opens the episode with its decision", Episode{Repository: "acme/checkout", RunID: 7},
			func(e Episode) (Episode, bool) { return e.Fail(failure(1, 1, recovery.ActionRetry)) }, true, StateRetryScheduled, 1, 1,
			func(t *testing.T, e Episode) {
				if e.NextRetryAt == nil || !e.NextRetryAt.Equal(t0.Add(10*time.Second)) || e.RetryCount != 1 || !e.CreatedAt.Equal(t0) {
					t.Errorf("got %+v", e)
				}
			}},
		{"the same attempt delivered again is refused", episodeIn(StateRetrying),
			func(e Episode) (Episode, bool) { return e.Fail(failure(1, 2, recovery.ActionRetry)) }, false, StateRetrying, 1, 3, nil},
		{"an older attempt arriving late is refused", Episode{RunAttempt: 3, State: StateRetrying, Seq: 5},
			func(e Episode) (Episode, bool) { return e.Fail(failure(2, 2, recovery.ActionAlert)) }, false, StateRetrying, 3, 5, nil},
		{"a later failed attempt moves a retrying episode on", episodeIn(StateRetrying),
			func(e Episode) (Episode, bool) { return e.Fail(failure(2, 2, recovery.ActionRollback)) }, true, StateRollingBack, 2, 4,
			func(t *testing.T, e Episode) {
				if e.NextRetryAt != nil || e.RetryCount != 2 {
					t.Errorf("got %+v", e)
				}
			}},
		{"an alert decision alerts", episodeIn(StateRetrying),
			func(e Episode) (Episode, bool) { return e.Fail(failure(2, 4, recovery.ActionAlert)) }, true, StateAlerted, 2, 4, nil},
		{"a skip decision skips", episodeIn(StateRetrying),
			func(e Episode) (Episode, bool) { return e.Fail(failure(2, 4, recovery.ActionSkip)) }, true, StateSkipped, 2, 4, nil},
		{"a later success recovers", episodeIn(StateRetrying),
			func(e Episode) (Episode, bool) { return e.Succeed(2, t0) }, true, StateRecovered, 2, 4, nil},
		{"success of a run without an episode changes nothing", Episode{},
			func(e Episode) (Episode, bool) { return e.Succeed(1, t0) }, false, "", 0, 0, nil},
		{"a recovered episode is not recovered twice", episodeIn(StateRecovered),
			func(e Episode) (Episode, bool) { return e.Succeed(2, t0) }, false, StateRecovered, 1, 3, nil},
		{"success of an older attempt does not close the episode", Episode{RunAttempt: 3, State: StateRetrying, Seq: 5},
			func(e Episode) (Episode, bool) { return e.Succeed(2, t0) }, false, StateRetrying, 3, 5, nil},
		{"an accepted re-run moves a scheduled retry to retrying", episodeIn(StateRetryScheduled),
			func(e Episode) (Episode, bool) { return e.RerunRequested(1, t0) }, true, StateRetrying, 1, 4, nil},
		{"a re-run of another attempt is not this retry", episodeIn(StateRetryScheduled),
			func(e Episode) (Episode, bool) { return e.RerunRequested(2, t0) }, false, StateRetryScheduled, 1, 3, nil},
		{"a re-run after the episode was closed changes nothing", episodeIn(StateRecovered),
			func(e Episode) (Episode, bool) { return e.RerunRequested(1, t0) }, false, StateRecovered, 1, 3, nil},
		{"a retry that can no longer happen is decided again", episodeIn(StateRetryScheduled),
			func(e Episode) (Episode, bool) {
				return e.Redecide(1, recovery.Decision{Action: recovery.ActionAlert}, t0)
			}, true, StateAlerted, 1, 4, nil},
		{"deciding again never schedules another retry", episodeIn(StateRetryScheduled),
			func(e Episode) (Episode, bool) {
				return e.Redecide(1, recovery.Decision{Action: recovery.ActionRetry}, t0)
			}, false, StateRetryScheduled, 1, 3, nil},
		{"the dispatched rollback run is recorded once", Episode{RunAttempt: 2, State: StateRollingBack, Seq: 4},
			func(e Episode) (Episode, bool) { return e.RollbackDispatched(2, 99, t0) }, true, StateRollingBack, 2, 5,
			func(t *testing.T, e Episode) {
				if _, again := e.RollbackDispatched(2, 100, t0); again || e.RollbackRunID != 99 {
					t.Errorf("recorded twice or lost: %+v", e)
				}
			}},
		{"the release a pull-request rollback opened is recorded once", Episode{RunAttempt: 2, State: StateRollingBack, Seq: 4},
			func(e Episode) (Episode, bool) { return e.RollbackOpened(2, "rollback-1", t0) }, true, StateRollingBack, 2, 5,
			func(t *testing.T, e Episode) {
				if e.RollbackReleaseID != "rollback-1" {
					t.Errorf("rollback release %q", e.RollbackReleaseID)
				}
				if _, ok := e.RollbackOpened(2, "rollback-2", t0); ok {
					t.Error("a second rollback release was recorded")
				}
			}},
		{"a later failure forgets the earlier attempt's rollback run, so its own rollback is dispatched",
			Episode{RunAttempt: 1, State: StateRolledBack, RollbackRunID: 55, Seq: 5},
			func(e Episode) (Episode, bool) { return e.Fail(failure(2, 4, recovery.ActionRollback)) }, true, StateRollingBack, 2, 6,
			func(t *testing.T, e Episode) {
				if e.RollbackRunID != 0 {
					t.Errorf("rollback run %d of attempt 1 kept: the dispatch of attempt 2 would be skipped", e.RollbackRunID)
				}
				if next, ok := e.RollbackDispatched(2, 66, t0); !ok || next.RollbackRunID != 66 {
					t.Errorf("dispatch of attempt 2's rollback: ok %v, run %d; want run 66 recorded", ok, next.RollbackRunID)
				}
			}},
		{"the rollback release becoming healthy closes the episode", Episode{State: StateRollingBack, RollbackReleaseID: "rollback-1", Seq: 5},
			func(e Episode) (Episode, bool) { return e.RolledBack(t0) }, true, StateRolledBack, 0, 6, nil},
		{"a later failure forgets the earlier attempt's rollback release", Episode{RunAttempt: 1, State: StateAlerted, RollbackReleaseID: "rollback-1", Seq: 5},
			func(e Episode) (Episode, bool) { return e.Fail(failure(2, 2, recovery.ActionRollback)) }, true, StateRollingBack, 2, 6,
			func(t *testing.T, e Episode) {
				if e.RollbackReleaseID != "" {
					t.Errorf("rollback release %q kept", e.RollbackReleaseID)
				}
			}},
		{"the rollback run's success closes the episode", Episode{State: StateRollingBack, RollbackRunID: 99, Seq: 5},
			func(e Episode) (Episode, bool) { return e.RolledBack(t0) }, true, StateRolledBack, 0, 6, nil},
		{"a rollback not yet dispatched cannot have succeeded", Episode{State: StateRollingBack, Seq: 4},
			func(e Episode) (Episode, bool) { return e.RolledBack(t0) }, false, StateRollingBack, 0, 4, nil},
		{"a cancelled re-run ends the wait", episodeIn(StateRetrying),
			func(e Episode) (Episode, bool) { return e.Stop(2, "cancelled", t0) }, true, StateStopped, 2, 4,
			func(t *testing.T, e Episode) {
				if next, ok := e.Fail(failure(3, 2, recovery.ActionRetry)); !ok || next.State != StateRetryScheduled {
					t.Errorf("a later failure after a stop was not decided: %v %s", ok, next.State)
				}
				if _, ok := e.Stop(2, "cancelled", t0); ok {
					t.Errorf("stopped twice")
				}
			}},
		{"the cancelled failed attempt itself does not stop the episode", episodeIn(StateRetrying),
			func(e Episode) (Episode, bool) { return e.Stop(1, "cancelled", t0) }, false, StateRetrying, 1, 3, nil},
		{"a cancelled attempt does not reopen an alert", episodeIn(StateAlerted),
			func(e Episode) (Episode, bool) { return e.Stop(2, "cancelled", t0) }, false, StateAlerted, 1, 3, nil},
		{"a rollback that did not happen becomes an alert", Episode{RunAttempt: 2, State: StateRollingBack, RollbackRunID: 99, Seq: 5},
			func(e Episode) (Episode, bool) {
				return e.RollbackFailed(2, recovery.Decision{Action: recovery.ActionAlert, Rule: RuleRollbackFailed}, t0)
			}, true, StateAlerted, 2, 6,
			func(t *testing.T, e Episode) {
				if _, again := e.RollbackFailed(2, e.Decision, t0); again {
					t.Errorf("a failed rollback was recorded twice")
				}
			}},
		{"a rollback of an older attempt does not fail the newer one", Episode{RunAttempt: 3, State: StateRollingBack, Seq: 5},
			func(e Episode) (Episode, bool) {
				return e.RollbackFailed(2, recovery.Decision{Action: recovery.ActionAlert}, t0)
			}, false, StateRollingBack, 3, 5, nil},
		{"only a rollback can fail", episodeIn(StateRetryScheduled),
			func(e Episode) (Episode, bool) {
				return e.RollbackFailed(1, recovery.Decision{Action: recovery.ActionAlert}, t0)
			}, false, StateRetryScheduled, 1, 3, nil},
		{"a failed rollback run re-run by hand that succeeds closes the episode",
			Episode{State: StateAlerted, Decision: recovery.Decision{Rule: RuleRollbackFailed}, RollbackRunID: 99, Seq: 6},
			func(e Episode) (Episode, bool) { return e.RolledBack(t0) }, true, StateRolledBack, 0, 7, nil},
		{"an alert for another reason is not closed by a rollback run", Episode{State: StateAlerted, RollbackRunID: 99, Seq: 6},
			func(e Episode) (Episode, bool) { return e.RolledBack(t0) }, false, StateAlerted, 0, 6, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := c.step(c.from)
			if ok != c.ok || got.State != c.state || got.RunAttempt != c.attempt || got.Seq != c.nextSeq {
				t.Fatalf("ok %v, state %q, attempt %d, seq %d; want %v, %q, %d, %d", ok, got.State, got.RunAttempt, got.Seq,
					c.ok, c.state, c.attempt, c.nextSeq)
			}
			if c.checkFn != nil {
				c.checkFn(t, got)
			}
		})
	}
}

func TestAlertKeyIsTheReleaseOrTheRun(t *testing.T) {
	t.Parallel()
	if k := (Episode{Repository: "acme/checkout", RunID: 7, ReleaseID: "r2"}).AlertKey(); k != "r2" {
		t.Errorf("with a release: %q", k)
	}
	if k := (Episode{Repository: "acme/checkout", RunID: 7}).AlertKey(); k != "run:acme/checkout#7" {
		t.Errorf("without a release: %q", k)
	}
}
