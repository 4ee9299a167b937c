package rollbackflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-github/v66/github"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/eligibility"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/repoconfig"
)

// starter is the shell every entry point shares: it loads what Decide needs
// and queues the job.
type starter struct {
	deps   pipeline.Deps
	loader *configload.Loader
}

func newStarter(d pipeline.Deps) *starter {
	return &starter{deps: d, loader: configload.NewLoaderFor(d)}
}

// prepare decides s for the app repository, whose config is cfg; gh is that
// repository's installation client (GETs only).
func (st *starter) prepare(ctx context.Context, gh *github.Client, cfg *repoconfig.Config, repository string, s Start) (Plan, Input, error) {
	env, ok := cfg.Environment(s.App, s.Environment)
	if !ok {
		return Plan{}, Input{}, refuse("%s has no app %q with environment %q in .github/ripcord.yml", repository, s.App, s.Environment)
	}
	// An app's environment belongs to the repository of its first release
	// (README, POST /api/v1/facts): another repository declaring the same
	// app and environment in its config does not make it theirs to roll
	// back, and its writers' permission there says nothing about the app.
	owner, err := st.deps.Records.Owner(ctx, s.App, s.Environment)
	if err != nil {
		return Plan{}, Input{}, err
	}
	if owner != "" && !strings.EqualFold(owner, repository) {
		return Plan{}, Input{}, refuse("%s in %s belongs to %s (the repository of its first release), not %s; roll it back from %s",
			s.App, s.Environment, owner, repository, owner)
	}
	rev, err := defaultHead(ctx, gh, repository)
	if err != nil {
		return Plan{}, Input{}, err
	}
	return st.decide(ctx, Input{Start: s, Repository: repository, Env: *env, Cluster: or(s.Cluster, env.Cluster),
		Window: cfg.Eligibility.Window, ConfigRevision: rev, PublicURL: st.deps.Config.PublicURL})
}

// decide loads the records for in and calls Decide. It returns in as
// loaded, so that a later attempt can be decided again without reading.
func (st *starter) decide(ctx context.Context, in Input) (Plan, Input, error) {
	s := in.Start
	if in.Cluster == "" {
		return Plan{}, in, refuse("cluster: %s in %s names no cluster in .github/ripcord.yml; pass one", s.App, s.Environment)
	}
	window := in.Window
	if window <= 0 {
		window = repoconfig.DefaultEligibilityWindow
	}
	// The target's newest releases that ran: opened ones (pull requests
	// not merged, earlier rollbacks among them) are neither the current
	// release nor a target and take no place in the window, so however many
	// there are they must not crowd it out. ReadAhead more let the answer
	// say why an older one does not count.
	newest, err := st.deps.Records.NewestRan(ctx, window+eligibility.ReadAhead,
		[]records.Target{{App: s.App, Environment: s.Environment, Cluster: in.Cluster}})
	if err != nil {
		return Plan{}, in, err
	}
	in.Newest, in.Window = newest, window
	if to := strings.TrimSpace(s.To); to != "" {
		if in.Named, err = st.named(ctx, to, newest); err != nil {
			return Plan{}, in, err
		}
	}
	plan, err := Decide(in)
	return plan, in, err
}

// named finds the release To names: by digest among the newest records, or
// by release id anywhere (an old release may be named on purpose).
func (st *starter) named(ctx context.Context, to string, newest []records.Record) (*records.Record, error) {
	if namesDigest(to) {
		for i, r := range newest {
			if r.ResolvedDigest() == to && r.Ran() {
				return &newest[i], nil
			}
		}
		return nil, nil
	}
	rec, err := st.deps.Records.Get(ctx, to)
	if errors.Is(err, records.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &rec, nil
}

// defaultHead is the commit at the head of repository's default branch: the
// rollback's config_revision.
func defaultHead(ctx context.Context, gh *github.Client, repository string) (string, error) {
	owner, name, _ := strings.Cut(repository, "/")
	repo, _, err := gh.Repositories.Get(ctx, owner, name)
	if err != nil {
		return "", fmt.Errorf("default branch of %s: %w", repository, err)
	}
	b, _, err := gh.Repositories.GetBranch(ctx, owner, name, repo.GetDefaultBranch(), 1)
	if err != nil {
		return "", fmt.Errorf("head of %s@%s: %w", repository, repo.GetDefaultBranch(), err)
	}
	return b.GetCommit().GetSHA(), nil
}

// Queued is what queueing a rollback did.
type Queued struct {
	JobID int64
	// Duplicate is true when the same rollback was asked for already: its
	// job (queued, running or done) carries on, and no second one is made.
	Duplicate bool
}

// queue inserts the pull-request job in tx, unique by the release id.
func (st *starter) queue(ctx context.Context, tx *sql.Tx, a PullRequestArgs) (Queued, error) {
	res, err := st.deps.River().InsertTx(ctx, tx, a, &river.InsertOpts{MaxAttempts: jobAttempts,
		UniqueOpts: river.UniqueOpts{ByArgs: true}})
	if err != nil {
		return Queued{}, fmt.Errorf("queue rollback pull request for %s: %w", a.ReleaseID, err)
	}
	return Queued{JobID: res.Job.ID, Duplicate: res.UniqueSkippedAsDuplicate}, nil
}

// installationOf is the installation that can write to repository.
func installationOf(ctx context.Context, d pipeline.Deps, repository string) (int64, error) {
	id, err := pipeline.InstallationOf(ctx, d.DB.Read, repository)
	switch {
	case err != nil || id != 0:
	case d.App != nil && !d.App().Configured:
		noApp := &pipeline.NoApp{Repository: repository}
		err = &Refused{Reason: noApp.Error(), cause: noApp}
	default:
		err = refuse("%s", pipeline.NotInstalled(d.App, repository))
	}
	return id, err
}
