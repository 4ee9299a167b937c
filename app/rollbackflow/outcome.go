package rollbackflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/commands"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/repoconfig"
	"github.com/ripcord/ripcord/rollbackpr"
)

// start decides a rollback asked for in a comment or with a button and
// returns the answer and the job to queue. A rollback that is open already
// is answered with its pull request instead.
func (st *starter) start(ctx context.Context, gh *github.Client, cfg *repoconfig.Config, repository string, s Start, reply *ReplyTo) (commands.Outcome, error) {
	plan, open, err := st.begin(ctx, gh, cfg, repository, s)
	var refused *Refused
	if errors.As(err, &refused) {
		return commands.Outcome{Reply: "Not rolling back: " + refused.Reason + "."}, nil
	}
	if err != nil {
		return commands.Outcome{}, err
	}
	if open != nil {
		return commands.Outcome{Reply: fmt.Sprintf("This rollback is open already: release `%s`, pull request %s.", open.ReleaseID, open.PRURL)}, nil
	}
	return commands.Outcome{
		Reply: startedText(plan),
		Commit: func(ctx context.Context, tx *sql.Tx) error {
			_, err := st.queue(ctx, tx, argsFor(plan, reply))
			return err
		},
	}, nil
}

// begin decides s; open is the rollback's release record when the same
// rollback was opened already (nil otherwise), so nothing new is queued.
func (st *starter) begin(ctx context.Context, gh *github.Client, cfg *repoconfig.Config, repository string, s Start) (Plan, *records.Record, error) {
	plan, err := st.prepare(ctx, gh, cfg, repository, s)
	if err != nil {
		return Plan{}, nil, err
	}
	rec, err := st.deps.Records.Get(ctx, plan.Record.ReleaseID)
	switch {
	case err == nil:
		return plan, &rec, nil
	case errors.Is(err, records.ErrNotFound):
		return plan, nil, nil
	}
	return Plan{}, nil, err
}

// permit is the permission check every person's way to start a rollback
// shares: the user's permission on repository, read through its
// installation client, against commands.rollback in cfg (default write).
func permit(ctx context.Context, gh *github.Client, cfg *repoconfig.Config, repository, user string) (commands.Verdict, error) {
	need, _ := cfg.CommandPermission(commands.Rollback)
	return commands.CheckPermission(ctx, gh.Repositories, repository, user, commands.Rollback, need)
}

func startedText(p Plan) string {
	e := p.Request.Rollback.Eligibility
	verdict := "an eligible rollback target"
	if !e.Eligible {
		verdict = "**not** an eligible rollback target (" + e.Reason + "), so it is an ordinary promotion and gets every gate"
	}
	return fmt.Sprintf("Rolling %s back in %s: release `%s` replaces `%s` with `%s` (%s), %s. Opening the pull request on `%s` in %s; I will post the link here.",
		p.Record.App, p.Record.Environment, p.Record.ReleaseID, p.Record.RollbackOf, p.Target,
		rollbackpr.ShortSHA(p.Record.GitRevision), verdict, branchOf(p), p.Request.Repository)
}
