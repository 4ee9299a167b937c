package rollbackflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/ripcord/ripcord/app/commands"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/repoconfig"
)

// RollbackCommand is `/ripcord rollback [to <release-id|digest>] [reason…]`
// in a pull request or issue comment. Hand it to commands.Register, which
// checks the commenter's permission (commands.rollback, default write)
// before Run.
func RollbackCommand(d pipeline.Deps) commands.Runner { return rollbackCommand{st: newStarter(d)} }

type rollbackCommand struct{ st *starter }

func (rollbackCommand) Name() string { return commands.Rollback }

// RunsOnIssues lets the command run in issue comments too.
func (rollbackCommand) RunsOnIssues() bool { return true }

func (c rollbackCommand) Run(ctx context.Context, inv commands.Invocation) (commands.Outcome, error) {
	to, reason := ParseArgs(inv.Command.Args)
	s, err := c.which(ctx, inv, to)
	if err == nil {
		s.Reason, s.RequestedBy = reason, fmt.Sprintf("@%s with `%s` on %s#%d", inv.User, inv.Command.Line, inv.Repository, inv.PullRequest)
		reply := &ReplyTo{Repository: inv.Repository, Number: inv.PullRequest, InstallationID: inv.InstallationID,
			Key: fmt.Sprintf("comment-%d", inv.CommentID), User: inv.User}
		out, err := c.st.start(ctx, inv.GitHub, inv.Config.Config, inv.Repository, s, reply)
		if commit := out.Commit; commit != nil {
			out.Commit = func(ctx context.Context, tx *sql.Tx) error {
				err := commit(ctx, tx)
				var refused *Refused
				if errors.As(err, &refused) {
					// Another rollback of the environment was queued since
					// start looked: the promise of a link is taken back.
					return c.st.queueReply(ctx, tx, reply, "Not rolling back after all: "+refused.Reason+".")
				}
				return err
			}
		}
		return out, err
	}
	var refused *Refused
	if errors.As(err, &refused) {
		return commands.Outcome{Reply: "Not rolling back: " + refused.Reason + "."}, nil
	}
	return commands.Outcome{}, err
}

// namesDigest reports whether a target names an image digest rather than
// a release id; a release id may well start with "sha" ("shadow-…"). The
// command and the start (named) must agree, or a digest is looked up as a
// release id and refused as "no release … is recorded".
func namesDigest(to string) bool {
	return strings.HasPrefix(to, "sha256:") || strings.HasPrefix(to, "sha512:")
}

// which names the app, environment and cluster to roll back: the named
// release's; else the release this pull request opened; else the only
// environment of the config that rolls back by pull request.
func (c rollbackCommand) which(ctx context.Context, inv commands.Invocation, to string) (Start, error) {
	d := c.st.deps
	if to != "" && !namesDigest(to) {
		rec, err := d.Records.Get(ctx, to)
		if errors.Is(err, records.ErrNotFound) {
			return Start{}, refuse("no release %q is recorded", to)
		}
		if err != nil {
			return Start{}, err
		}
		return Start{App: rec.App, Environment: rec.Environment, Cluster: rec.Cluster, To: to}, nil
	}
	rec, err := releaseOfPullRequest(ctx, d.DB.Read, inv.Config.Config, inv.Repository, inv.PullRequest)
	if err != nil {
		return Start{}, err
	}
	if rec != nil {
		r, err := d.Records.Get(ctx, *rec)
		if err != nil {
			return Start{}, err
		}
		return Start{App: r.App, Environment: r.Environment, Cluster: r.Cluster, To: to}, nil
	}
	var only []Start
	cfg := inv.Config.Config
	for _, app := range cfg.AppNames() {
		for _, env := range cfg.Apps[app].EnvironmentNames() {
			if e := cfg.Apps[app].Environments[env]; e.Rollback.Mode == repoconfig.ModePullRequest {
				only = append(only, Start{App: app, Environment: env, Cluster: e.Cluster, To: to})
			}
		}
	}
	if len(only) == 1 {
		return only[0], nil
	}
	return Start{}, refuse("this is not the pull request of a recorded release and .github/ripcord.yml has %d environments that roll back by pull request, so say which release: `%s %s to <release-id>`",
		len(only), commands.Prefix, commands.Rollback)
}

// releaseOfPullRequest is the newest release whose pull request is number
// in repository, nil when there is none; cfg is repository's config. A
// release's pull request is the one its pr_url names; without one, a
// rollback's lives in the rollback.repository cfg names for its
// environment, any other release's in its own repository. A rollback is
// recorded with the app's repository and the number of its pull request in
// the GitOps repository, so the repository alone would take that pull
// request for the app repository's one of the same number.
func releaseOfPullRequest(ctx context.Context, db *sql.DB, cfg *repoconfig.Config, repository string, number int) (*string, error) {
	fail := func(err error) (*string, error) {
		return nil, fmt.Errorf("release of %s#%d: %w", repository, number, err)
	}
	rows, err := db.QueryContext(ctx, `SELECT release_id, repository, kind, app, environment, pr_url FROM records
		WHERE pr_number = $2 AND (lower(repository) = lower($1) OR pr_url <> '')
		ORDER BY created_at DESC, release_id DESC`, repository, number)
	if err != nil {
		return fail(err)
	}
	defer rows.Close()
	for rows.Next() {
		var r records.Record
		var kind string
		if err := rows.Scan(&r.ReleaseID, &r.Repository, &kind, &r.App, &r.Environment, &r.PRURL); err != nil {
			return fail(err)
		}
		prRepo := r.Repository
		switch {
		case r.PRURL != "":
			prRepo, _ = pullRequestOf(r, r.Repository)
		case records.Kind(kind) == records.KindRollback && cfg != nil:
			if env, ok := cfg.Environment(r.App, r.Environment); ok && env.Rollback.Mode == repoconfig.ModePullRequest {
				prRepo = or(env.Rollback.Repository, r.Repository)
			}
		}
		if strings.EqualFold(prRepo, repository) {
			id := r.ReleaseID
			return &id, nil
		}
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	return nil, nil
}
