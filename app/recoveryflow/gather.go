package recoveryflow

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/eligibility"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/records"
)

// gather loads what plan needs for a failure of run: the run's task facts,
// its failed jobs when the facts do not name the failure type, and the
// records of the environment it deployed.
func (f *flow) gather(ctx context.Context, gh *github.Client, repository string, g *gathered) error {
	facts, err := f.runFacts(ctx, repository, g.Run.ID)
	if err != nil {
		return err
	}
	g.Fact = pickFact(facts, g.Run.Attempt, g.Deploys)
	cfg := g.Config.Config
	deploy, _ := chooseDeploy(g.Deploys, g.Fact)
	if !factNamesType(g) && len(cfg.RecoveryFor(deploy.App).FailureTypes) > 0 {
		if g.FailedJobs, err = failedJobs(ctx, gh, repository, g.Run); err != nil {
			return err
		}
	}
	cluster := ""
	if env, ok := cfg.Environment(deploy.App, deploy.Environment); ok {
		cluster = env.Cluster
	}
	if g.Fact != nil {
		rec, err := f.deps.Records.Get(ctx, g.Fact.ReleaseKey())
		switch {
		case err == nil:
			g.Failed, cluster = &rec, rec.Cluster
		case !errors.Is(err, records.ErrNotFound):
			return fmt.Errorf("load failed release %s: %w", g.Fact.ReleaseKey(), err)
		}
	}
	if deploy.Environment == "" {
		return nil
	}
	// The newest releases that ran, past the window by ReadAhead to say
	// why an older one does not count: opened records (pull requests not
	// merged) take no place in it, as in every other eligibility check, so
	// however many there are they must not crowd it out.
	g.Newest, err = f.deps.Records.NewestRan(ctx, cfg.Eligibility.Window+eligibility.ReadAhead,
		[]records.Target{{App: deploy.App, Environment: deploy.Environment, Cluster: cluster}})
	if err != nil {
		return err
	}
	if g.Failed != nil && !g.Failed.Ran() && g.Failed.SameTarget(records.Record{
		App: deploy.App, Environment: deploy.Environment, Cluster: cluster}) {
		// Not among the releases that ran, but the previous target is
		// chosen from it, as when the newest records were read whatever
		// their state.
		g.Newest = append(g.Newest, *g.Failed)
		slices.SortStableFunc(g.Newest, func(a, b records.Record) int {
			return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ReleaseID, a.ReleaseID))
		})
	}
	g.Running, err = f.running(ctx, g.Newest)
	return err
}

// running is the ids of rs that a cluster source reports on a workload
// now, running the record's image: a workload that kept a release's id
// after an undo runs another image (drift), not that release.
func (f *flow) running(ctx context.Context, rs []records.Record) ([]string, error) {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.ReleaseID
	}
	obs, err := f.deps.Records.Observed(ctx, ids)
	if err != nil {
		return nil, err
	}
	var running []string
	for _, r := range rs {
		for _, o := range obs {
			if o.ReleaseID == r.ReleaseID && (r.Cluster == "" || o.Cluster == r.Cluster) && r.RunsImage(o.Images) {
				running = append(running, r.ReleaseID)
				break
			}
		}
	}
	return running, nil
}

func factNamesType(g *gathered) bool {
	f := g.Fact
	return f != nil && f.RunAttempt == g.Run.Attempt && f.Status == records.TaskFailed && f.FailureType != ""
}

// runFacts reads the task facts posted in one workflow run. The records
// store has no query by run, so this reads the facts table directly, through
// the facts_task_run index of migration 00003.
func (f *flow) runFacts(ctx context.Context, repository string, runID int64) ([]records.Fact, error) {
	var q string
	var arg any
	if f.deps.DB.Dialect == store.Postgres {
		q, arg = `SELECT body FROM facts WHERE source = 'task' AND (body::jsonb ->> 'workflow_run_id') = $1`, strconv.FormatInt(runID, 10)
	} else {
		q, arg = `SELECT body FROM facts WHERE source = 'task' AND json_extract(body, '$.workflow_run_id') = $1`, runID
	}
	rows, err := f.deps.DB.Read.QueryContext(ctx, q, arg)
	if err != nil {
		return nil, fmt.Errorf("task facts of run %d: %w", runID, err)
	}
	defer rows.Close()
	var out []records.Fact
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			return nil, fmt.Errorf("task facts of run %d: %w", runID, err)
		}
		var fact records.Fact
		if err := json.Unmarshal(body, &fact); err != nil {
			return nil, fmt.Errorf("task facts of run %d: %w", runID, err)
		}
		// Run ids are unique across GitHub, but a fact only counts for the
		// repository whose OIDC token posted it.
		if strings.EqualFold(fact.Repository, repository) && fact.WorkflowRunID == runID {
			out = append(out, fact)
		}
	}
	return out, rows.Err()
}

// failedJobs lists the names of the jobs that failed in the run's attempt.
func failedJobs(ctx context.Context, gh *github.Client, repository string, run runInfo) ([]string, error) {
	owner, repo, _ := strings.Cut(repository, "/")
	opts := &github.ListOptions{PerPage: 100}
	var names []string
	for {
		jobs, resp, err := gh.Actions.ListWorkflowJobsAttempt(ctx, owner, repo, run.ID, int64(max(run.Attempt, 1)), opts)
		if err != nil {
			return nil, fmt.Errorf("jobs of run %d attempt %d: %w", run.ID, run.Attempt, err)
		}
		for _, j := range jobs.Jobs {
			if c := j.GetConclusion(); c == "failure" || c == "timed_out" {
				names = append(names, j.GetName())
			}
		}
		if resp.NextPage == 0 {
			return names, nil
		}
		opts.Page = resp.NextPage
	}
}
