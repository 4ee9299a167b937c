package recoveryflow

import (
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/recovery"
	"github.com/ripcord/ripcord/repoconfig"
)

const planConfig = `version: 1
apps:
  checkout:
    environments:
      staging:
        cluster: eu
        workflows: [deploy.yml]
        rollback: {mode: workflow, workflow: deploy.yml, input: version}
      prod:
        cluster: eu
        workflows: [deploy.yml]
        rollback: {mode: pull-request, file: release.yaml, fields: {image: image}}
recovery:
  max_retries: 3
  failure_types:
    build_failure: ["build*"]
`

func loaded(t *testing.T) configload.Result {
	t.Helper()
	cfg, problems := repoconfig.Load([]byte(planConfig))
	if problems != nil {
		t.Fatal(problems)
	}
	return configload.Result{Found: true, Config: cfg, Source: configload.Source{Repository: "acme/checkout", Path: repoconfig.Path}}
}

func rec(id, image string, healthy bool, age time.Duration) records.Record {
	r := records.Record{ReleaseID: id, App: "checkout", Environment: "staging", Cluster: "eu", Image: image,
		State: records.StateFailed, CreatedAt: t0.Add(-age)}
	if healthy {
		at := r.CreatedAt.Add(time.Minute)
		r.HealthyAt, r.State = &at, records.StateSuperseded
	}
	// It ran: facts moved it (records.Record.Ran).
	last := r.CreatedAt.Add(2 * time.Minute)
	r.LastFactAt = &last
	return r
}

func taskFact(attempt int, status records.TaskStatus, failureType, env string) *records.Fact {
	return &records.Fact{Source: records.SourceTask, Repository: "acme/checkout", WorkflowRunID: 7, RunAttempt: attempt,
		Status: status, FailureType: failureType, App: "checkout", Environment: env, ReleaseID: "r2", Version: "v2"}
}

func TestPlan(t *testing.T) {
	t.Parallel()
	v1, v2, v3 := rec("r1", "v1", true, 2*time.Hour), rec("r2", "v2", false, time.Hour), rec("r3", "v3", true, time.Minute)
	staging := []repoconfig.Deploy{{App: "checkout", Environment: "staging"}}
	both := []repoconfig.Deploy{{App: "checkout", Environment: "staging"}, {App: "checkout", Environment: "prod"}}
	pinned := rec("r2", "registry.example/checkout@sha256:"+strings.Repeat("a", 64), false, time.Hour)
	cases := []struct {
		name       string
		count      int // retry_count
		deploys    []repoconfig.Deploy
		fact       *records.Fact
		failed     *records.Record
		newest     []records.Record
		jobs       []string
		rule       string
		typ, from  string
		target     string // the rollback target's version
		wantNote   bool
		liveOrFail string   // FailedVersion/live version as "failed/live"
		running    []string // releases a cluster source reports running
	}{
		{"the failed version running with a healthy one before rolls back to it", 4, staging, taskFact(1, records.TaskFailed, "health_check_failure", "staging"),
			&v2, []records.Record{v2, v1}, nil, recovery.RuleRollback, "health_check_failure", FromFact, "v1", false, "v2/v2", nil},
		{"another version running is skipped", 4, staging, taskFact(1, records.TaskFailed, "", "staging"),
			&v2, []records.Record{v3, v2, v1}, nil, recovery.RuleSkipOtherVersionLive, repoconfig.FailureUnknown, FromNone, "", false, "v2/v3", nil},
		{"a build failure is retried while retries remain", 1, staging, taskFact(1, records.TaskFailed, "build_failure", "staging"),
			&v2, []records.Record{v2, v1}, nil, recovery.RuleRetry, "build_failure", FromFact, "", false, "v2/v2", nil},
		{"a build failure after the retries is an alert, not a rollback", 4, staging, taskFact(1, records.TaskFailed, "build_failure", "staging"),
			&v2, []records.Record{v2, v1}, nil, recovery.RuleBuildFailure, "build_failure", FromFact, "", false, "v2/v2", nil},
		{"this attempt's fact names the type before the failed jobs do", 4, staging, taskFact(1, records.TaskFailed, "health_check_failure", "staging"),
			&v2, []records.Record{v2, v1}, []string{"build"}, recovery.RuleRollback, "health_check_failure", FromFact, "v1", false, "v2/v2", nil},
		{"failed jobs name the type when the fact does not", 4, staging, taskFact(1, records.TaskFailed, "", "staging"),
			&v2, []records.Record{v2, v1}, []string{"build-image"}, recovery.RuleBuildFailure, "build_failure", FromJobs, "", false, "v2/v2", nil},
		{"an earlier attempt's fact does not name this attempt's type", 4, staging, taskFact(0, records.TaskFailed, "build_failure", "staging"),
			&v2, []records.Record{v2, v1}, nil, recovery.RuleRollback, repoconfig.FailureUnknown, FromNone, "v1", false, "v2/v2", nil},
		{"without a task fact the failed version is unknown and nothing is rolled back", 4, staging, nil,
			nil, []records.Record{v2, v1}, nil, recovery.RuleFailedVersionUnknown, repoconfig.FailureUnknown, FromNone, "", false, "/v2", nil},
		{"a workflow deploying two environments without a fact says which are possible", 4, both, nil,
			nil, nil, nil, recovery.RuleNoPreviousVersion, repoconfig.FailureUnknown, FromNone, "", true, "/", nil},
		{"pull-request mode is not available yet", 4, both, taskFact(1, records.TaskFailed, "", "prod"),
			ptr(prodOf(v2)), []records.Record{prodOf(v2), prodOf(v1)}, nil, recovery.RuleModeUnavailable, repoconfig.FailureUnknown, FromNone, "", false, "v2/v2", nil},
		{"an image pinned by digest only cannot be compared", 4, staging, taskFact(1, records.TaskFailed, "", "staging"),
			&v2, []records.Record{pinned, v1}, nil, recovery.RuleDigestPinned, repoconfig.FailureUnknown, FromNone, "", false, "v2/", nil},
		{"a first release has nothing to roll back to", 4, staging, taskFact(1, records.TaskFailed, "", "staging"),
			&v2, []records.Record{v2}, nil, recovery.RuleNoPreviousVersion, repoconfig.FailureUnknown, FromNone, "", false, "v2/v2", nil},
		{"a release whose pull request is not merged is neither what runs nor a target", 4, staging, taskFact(1, records.TaskFailed, "health_check_failure", "staging"),
			&v2, []records.Record{opened("r4", "v4", time.Second), v2, opened("r0", "v0", 90*time.Minute), v1}, nil, recovery.RuleRollback, "health_check_failure", FromFact, "v1", false, "v2/v2", nil},
		{"a rollback that failed before its patch (no fact) is not what runs", 4, staging, taskFact(1, records.TaskFailed, "health_check_failure", "staging"),
			&v2, []records.Record{failedUnrun("r4", "v1", time.Second), v2, v1}, nil, recovery.RuleRollback, "health_check_failure", FromFact, "v1", false, "v2/v2", nil},
		// Seed 000: the live version is what the cluster runs; a release
		// that failed before any pod ran it is not, so there is nothing to
		// roll back.
		{"a failed release the cluster never ran is skipped: the cluster reports the previous one", 4, staging, taskFact(1, records.TaskFailed, "health_check_failure", "staging"),
			&v2, []records.Record{v2, v1}, nil, recovery.RuleSkipOtherVersionLive, "health_check_failure", FromFact, "", false, "v2/v1", []string{"r1"}},
		{"a failed release the cluster reports running is rolled back", 4, staging, taskFact(1, records.TaskFailed, "health_check_failure", "staging"),
			&v2, []records.Record{v2, v1}, nil, recovery.RuleRollback, "health_check_failure", FromFact, "v1", false, "v2/v2", []string{"r2"}},
		{"of several workloads, the newest release reported is live", 4, staging, taskFact(1, records.TaskFailed, "health_check_failure", "staging"),
			&v2, []records.Record{v2, v1}, nil, recovery.RuleRollback, "health_check_failure", FromFact, "v1", false, "v2/v2", []string{"r1", "r2"}},
		{"a previous release that never became healthy is no target", 4, staging, taskFact(1, records.TaskFailed, "", "staging"),
			&v2, []records.Record{v2, rec("r1", "v1", false, 2*time.Hour)}, nil, recovery.RulePreviousNotEligible, repoconfig.FailureUnknown, FromNone, "", false, "v2/v2", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := plan(gathered{Now: t0, Run: runInfo{ID: 7, Attempt: 1, Status: "completed", Conclusion: "failure", CreatedAt: t0.Add(-time.Hour)},
				Config: loaded(t), Deploys: c.deploys, Fact: c.fact, Failed: c.failed, Newest: c.newest, Running: c.running, FailedJobs: c.jobs,
				RetryCount: c.count, Modes: []string{repoconfig.ModeWorkflow}})
			d, in := p.Decision, p.Context.Input
			if d.Rule != c.rule {
				t.Fatalf("rule %s (%s), want %s", d.Rule, d.Reason, c.rule)
			}
			if in.FailureType != c.typ || p.Context.FailureTypeSource != c.from {
				t.Errorf("failure type %s from %s, want %s from %s", in.FailureType, p.Context.FailureTypeSource, c.typ, c.from)
			}
			if got := in.FailedVersion + "/" + in.Live.Version; got != c.liveOrFail {
				t.Errorf("failed/live = %s, want %s", got, c.liveOrFail)
			}
			if c.target != "" && (d.Target == nil || d.Target.Version != c.target) {
				t.Errorf("target %+v, want %s", d.Target, c.target)
			}
			if (p.Context.Note != "") != c.wantNote {
				t.Errorf("note %q", p.Context.Note)
			}
			if p.Context.Config.Policy.MaxRetries != 3 || p.Context.Config.Window != 5 {
				t.Errorf("config applied %+v", p.Context.Config)
			}
		})
	}
}

// opened is a release whose pull request is not merged: it never ran.
func opened(id, image string, age time.Duration) records.Record {
	r := rec(id, image, false, age)
	r.State, r.LastFactAt = records.StateOpened, nil
	return r
}

// failedUnrun is a release that ended failed before any fact reached it
// (records.FailUnrun: its cluster action failed before the patch): it
// never ran.
func failedUnrun(id, image string, age time.Duration) records.Record {
	r := rec(id, image, false, age)
	r.LastFactAt = nil
	return r
}

func prodOf(r records.Record) records.Record { r.Environment = "prod"; return r }

func ptr[T any](v T) *T { return &v }

func TestVersionOf(t *testing.T) {
	t.Parallel()
	for image, want := range map[string]string{
		"registry:5000/shop/checkout:v1.2.3":                 "v1.2.3",
		"v1a2b3c4-1760000000":                                "v1a2b3c4-1760000000",
		"shop/checkout:v2@sha256:" + strings.Repeat("b", 64): "v2",
		"shop/checkout@sha256:" + strings.Repeat("b", 64):    "",
		"sha256:" + strings.Repeat("b", 64):                  "",
	} {
		if got := versionOf(image); got != want {
			t.Errorf("versionOf(%q) = %q, want %q", image, got, want)
		}
	}
}

func TestPickFact(t *testing.T) {
	t.Parallel()
	staging := []repoconfig.Deploy{{App: "checkout", Environment: "staging"}}
	other := *taskFact(2, records.TaskFailed, "x", "qa") // an environment the workflow is not configured for
	older := *taskFact(1, records.TaskFailed, "older", "staging")
	progress := *taskFact(2, records.TaskInProgress, "", "staging")
	this := *taskFact(2, records.TaskFailed, "this", "staging")
	cancelled := *taskFact(2, records.TaskCancelled, "", "staging")
	cancelledBefore := *taskFact(1, records.TaskCancelled, "", "staging")
	otherRelease := *taskFact(2, records.TaskFailed, "prod-eu down", "staging")
	otherRelease.ReleaseID = "r2-eu" // a matrix's other leg: its failure cancelled this one
	cases := []struct {
		name  string
		facts []records.Fact
		want  string // failure type of the pick, "-" for none
	}{
		{"a failed fact of this attempt comes first", []records.Fact{older, progress, this}, "this"},
		{"an unconfigured environment's fact never counts", []records.Fact{other}, "-"},
		{"the newest attempt before an older failure", []records.Fact{older, progress}, ""},
		{"an older failure when that is all there is", []records.Fact{older}, "older"},
		{"a cancelled deploy is never the failure", []records.Fact{cancelled}, "-"},
		{"nor its in_progress of the same attempt", []records.Fact{progress, cancelled}, "-"},
		{"nor an older failure of the release whose deploy was cancelled now", []records.Fact{older, progress, cancelled}, "-"},
		{"another release's failure of this attempt still counts", []records.Fact{cancelled, otherRelease}, "prod-eu down"},
		{"a cancel of an older attempt leaves this attempt's facts alone", []records.Fact{cancelledBefore, progress}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := "-"
			if f := pickFact(c.facts, 2, staging); f != nil {
				got = f.FailureType
			}
			if got != c.want {
				t.Errorf("picked %q, want %q", got, c.want)
			}
		})
	}
}
