package recoveryflow

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/eligibility"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/recovery"
	"github.com/ripcord/ripcord/repoconfig"
)

// Where a failure type came from, as the check run says.
const (
	FromFact = "fact" // the task fact the action posted in the run
	FromJobs = "jobs" // the failed jobs' names and recovery.failure_types
	FromNone = "none" // neither said: unknown
)

// runInfo is the failed run as the webhook (or a fresh GET) reported it.
type runInfo struct {
	ID         int64
	Attempt    int
	Status     string
	Conclusion string
	CreatedAt  time.Time
	Path       string
	HeadSHA    string
	Event      string // what started it: push, workflow_dispatch, …
	// ChangedAt is the newest time the webhook's payload states: when the
	// attempt ended (updated_at), zero when it states none.
	ChangedAt time.Time
}

func (r runInfo) recoveryRun() recovery.Run {
	return recovery.Run{ID: r.ID, Completed: r.Status == "completed", Attempt: r.Attempt, CreatedAt: r.CreatedAt}
}

// gathered is everything a failure decision is made from, loaded by the
// shell (gather.go); plan turns it into the decision without I/O.
type gathered struct {
	Now     time.Time
	Run     runInfo
	Config  configload.Result // valid
	Deploys []repoconfig.Deploy
	Fact    *records.Fact   // the task fact the release is read from, nil when none
	Failed  *records.Record // the fact's release record
	Newest  []records.Record
	// Running are the releases of Newest that a cluster source reports on
	// a workload now (its last fact named them); empty when no cluster
	// source reports the environment.
	Running    []string
	FailedJobs []string // nil when the jobs were not read
	RetryCount int
	Modes      []string // rollback modes with an executor
}

// planned is a failure decided, with the episode's identity.
type planned struct {
	Deploy    repoconfig.Deploy
	Cluster   string
	ReleaseID string
	Decision  recovery.Decision
	Context   Context
}

// plan decides a failure (DESIGN.md "Recovery"): the failure type, the
// versions, the policy and the rollback mode, then recovery.Decide.
func plan(g gathered) planned {
	cfg := g.Config.Config
	deploy, note := chooseDeploy(g.Deploys, g.Fact)
	p := planned{Deploy: deploy, Context: Context{Conclusion: g.Run.Conclusion, Note: note, FailedJobs: g.FailedJobs}}
	env, _ := cfg.Environment(deploy.App, deploy.Environment)
	if env != nil {
		p.Cluster = env.Cluster
	}
	if g.Failed != nil {
		p.ReleaseID, p.Cluster = g.Failed.ReleaseID, g.Failed.Cluster
	} else if g.Fact != nil {
		p.ReleaseID = g.Fact.ReleaseKey()
	}
	recov := cfg.RecoveryFor(deploy.App)
	in := recovery.Input{
		Now: g.Now, RetryCount: g.RetryCount, Policy: recovery.PolicyFrom(recov), Run: g.Run.recoveryRun(),
		AvailableModes: g.Modes,
	}
	in.FailureType, p.Context.FailureTypeSource = failureType(g, recov.FailureTypes)
	in.FailedVersion = failedVersion(g)
	current := p.ReleaseID
	if live, ok := liveRelease(g.Newest, g.Running); ok {
		in.Live = recovery.Live{Known: true, Version: versionOf(live.Image), Digest: live.ResolvedDigest()}
		p.Context.LiveReleaseID = live.ReleaseID
		if current == "" {
			current = live.ReleaseID
		}
	} else {
		in.Live = recovery.Live{Error: fmt.Sprintf("no release of %s in %s is recorded", deploy.App, where(deploy.Environment, p.Cluster))}
	}
	if current != "" {
		in.Previous = previousTarget(g.Newest, current, cfg.Eligibility.Window)
	}
	applied := Applied{Source: g.Config.Source.String(), Policy: in.Policy, Window: cfg.Eligibility.Window}
	if env != nil {
		in.RollbackMode = env.Rollback.Mode
		applied.RollbackMode, applied.Rollback = env.Rollback.Mode, env.Rollback
	}
	p.Context.Input, p.Context.Config = in, applied
	p.Decision = recovery.Decide(in)
	if g.Run.Conclusion == startupFailure {
		p.Decision = startupFailed(g.Run, p.Decision)
	}
	return p
}

// startupFailure is the conclusion of a run GitHub could not start: its
// workflow file is invalid, or it asks for a permission the repository does
// not grant. Re-running it fails the same way, and nothing was deployed.
const startupFailure = "startup_failure"

// RuleStartupFailure names the alert decided for a startup_failure.
const RuleStartupFailure = "alert-startup-failure"

// startupFailed is the alert for a run that failed to start, in place of
// d (what the policy alone would decide): never a retry, never a rollback.
func startupFailed(run runInfo, d recovery.Decision) recovery.Decision {
	return recovery.Decision{
		Action: recovery.ActionAlert, Rule: RuleStartupFailure,
		Reason: fmt.Sprintf("Run %d (attempt %d) ended with conclusion startup_failure: GitHub could not start it, because the workflow "+
			"file is invalid or asks for permissions the repository does not grant. Re-running it will not fix that and nothing was "+
			"deployed, so ripcord neither retries nor rolls back; a human has to fix the workflow.", run.ID, run.Attempt),
		Attempt: d.Attempt, MaxAttempts: d.MaxAttempts,
		AuditEvents: []string{recovery.EventFailureDetected, recovery.EventManualInterventionRequired},
	}
}

// chooseDeploy names the app and environment the run deployed: the task
// fact's, or the only configured one for its workflow. When the workflow
// deploys several and no fact says which, the environment stays unknown
// (no rollback can be aimed) and the note says so.
func chooseDeploy(deploys []repoconfig.Deploy, fact *records.Fact) (repoconfig.Deploy, string) {
	if fact != nil {
		return repoconfig.Deploy{App: fact.App, Environment: fact.Environment}, ""
	}
	if len(deploys) == 1 {
		return deploys[0], ""
	}
	names := make([]string, len(deploys))
	for i, d := range deploys {
		names[i] = d.App + "/" + d.Environment
	}
	return repoconfig.Deploy{App: deploys[0].App}, fmt.Sprintf(
		"The workflow deploys %s and the run posted no task fact saying which, so the environment is unknown and %s's recovery policy applies.",
		strings.Join(names, ", "), deploys[0].App)
}

// pickFact chooses the task fact a failed run's release is read from, among
// the facts of configured deploys: a failed fact of this attempt first, then
// the newest attempt's, failed before others, newest observation first.
//
// A release whose deploy job was cancelled in this attempt (a person, a
// concurrency group, the fail-fast of a matrix whose other leg failed) did
// not fail: none of its facts is picked, so recovery never retries or rolls
// back a release because its deploy was cancelled. Without another fact the
// run is decided as one that posted none.
func pickFact(facts []records.Fact, attempt int, deploys []repoconfig.Deploy) *records.Fact {
	cancelled := map[string]bool{}
	for _, f := range facts {
		if f.Status == records.TaskCancelled && f.RunAttempt == attempt {
			cancelled[f.ReleaseKey()] = true
		}
	}
	var cands []records.Fact
	for _, f := range facts {
		if f.Status == records.TaskCancelled || cancelled[f.ReleaseKey()] {
			continue
		}
		for _, d := range deploys {
			if f.App == d.App && f.Environment == d.Environment {
				cands = append(cands, f)
				break
			}
		}
	}
	if len(cands) == 0 {
		return nil
	}
	rank := func(f records.Fact) int {
		if f.RunAttempt == attempt && f.Status == records.TaskFailed {
			return 0
		}
		return 1
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		switch {
		case rank(a) != rank(b):
			return rank(a) < rank(b)
		case a.RunAttempt != b.RunAttempt:
			return a.RunAttempt > b.RunAttempt
		case (a.Status == records.TaskFailed) != (b.Status == records.TaskFailed):
			return a.Status == records.TaskFailed
		}
		return a.ObservedAt.After(b.ObservedAt)
	})
	return &cands[0]
}

// failureType is the fact's failure type for this attempt, else the failed
// jobs classified by failure_types, else unknown.
func failureType(g gathered, mapping map[string][]string) (string, string) {
	if f := g.Fact; f != nil && f.RunAttempt == g.Run.Attempt && f.Status == records.TaskFailed && f.FailureType != "" {
		return f.FailureType, FromFact
	}
	if len(g.FailedJobs) > 0 && len(mapping) > 0 {
		if t := recovery.ClassifyJobs(g.FailedJobs, mapping); t != repoconfig.FailureUnknown {
			return t, FromJobs
		}
	}
	return repoconfig.FailureUnknown, FromNone
}

func failedVersion(g gathered) string {
	switch {
	case g.Failed != nil:
		return versionOf(g.Failed.Image)
	case g.Fact != nil && g.Fact.Version != "":
		return versionOf(g.Fact.Version)
	case g.Fact != nil && len(g.Fact.Images) > 0:
		return versionOf(g.Fact.Images[0])
	}
	return ""
}

// versionOf is the version an image reference runs: its tag, the whole
// string for a bare version (workflow deploys), "" when pinned by digest only.
func versionOf(image string) string {
	ref := records.ParseImage(image)
	switch {
	case ref.Tag != "":
		return ref.Tag
	case ref.Digest == "":
		return ref.Repository
	}
	return ""
}

// previousTarget is eligibility.SelectTarget's choice relative to current,
// or, when nothing is eligible, the release just before current with
// SelectTarget's reason why it cannot be used; nil when there is none.
func previousTarget(newest []records.Record, current string, window int) *recovery.Target {
	rec, ans := eligibility.SelectTarget(newest, current, window)
	if ans.Eligible {
		return &recovery.Target{ReleaseID: rec.ReleaseID, Version: versionOf(rec.Image), Digest: rec.ResolvedDigest(),
			Eligible: true, Evidence: ans.Reason}
	}
	for i, r := range newest {
		if r.ReleaseID == current {
			if o, ok := newestThatRan(newest[i+1:]); ok {
				return &recovery.Target{ReleaseID: o.ReleaseID, Version: versionOf(o.Image), Digest: o.ResolvedDigest(), Evidence: ans.Reason}
			}
		}
	}
	return nil
}

// liveRelease is what runs in the environment (seed 000 reads it from the
// Deployment): the newest of rs that a cluster source reports on a
// workload now, so a release that failed before any pod ran it is not
// taken for the live one. When no cluster source reports any of rs
// (workflow deploys without the agent), the newest release that ran: the
// environment received nothing after it.
func liveRelease(rs []records.Record, running []string) (records.Record, bool) {
	for _, r := range rs {
		if slices.Contains(running, r.ReleaseID) {
			return r, true
		}
	}
	return newestThatRan(rs)
}

// newestThatRan is the first of rs (newest first) that ran: a release no
// fact reached (its pull request not merged, or its rollback action failed
// before the patch) is neither what runs nor something to go back to.
func newestThatRan(rs []records.Record) (records.Record, bool) {
	for _, r := range rs {
		if r.Ran() {
			return r, true
		}
	}
	return records.Record{}, false
}

func where(env, cluster string) string {
	env = orUnknown(env)
	if cluster == "" {
		return env
	}
	return env + "/" + cluster
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown environment"
	}
	return s
}
