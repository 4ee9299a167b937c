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
	b, err := st.begin(ctx, gh, cfg, repository, s)
	var refused *Refused
	if errors.As(err, &refused) {
		return commands.Outcome{Reply: "Not rolling back: " + refused.Reason + "."}, nil
	}
	if err != nil {
		return commands.Outcome{}, err
	}
	if open := b.open; open != nil {
		return commands.Outcome{Reply: fmt.Sprintf("This rollback is open already: release `%s`, pull request %s.", open.ReleaseID, open.PRURL)}, nil
	}
	plan := b.plan
	return commands.Outcome{
		Reply: startedText(plan),
		// A *Refused from Commit is another rollback of the environment
		// queued since begin looked (claim): nothing is written, and the
		// caller answers with it instead.
		Commit: func(ctx context.Context, tx *sql.Tx) error {
			if err := st.claim(ctx, tx, plan, b.merged); err != nil {
				return err
			}
			q, err := st.queue(ctx, tx, argsFor(plan, reply))
			if err != nil || !q.Duplicate || reply == nil {
				return err
			}
			// The job of an earlier request (another comment, the button,
			// the API) opens this rollback and answers only that request:
			// the link promised here would never come.
			return st.queueReply(ctx, tx, reply, fmt.Sprintf("This rollback is being opened already, for an earlier request: "+
				"release `%s` will link its pull request once it is open%s.", plan.Record.ReleaseID, releaseLink(plan)))
		},
	}, nil
}

// begun is a rollback decided by begin.
type begun struct {
	plan Plan
	// open is the rollback's release record when the same rollback is
	// open already (nil otherwise): nothing new is queued.
	open *records.Record
	// merged are the rollbacks of the environment that GitHub says are
	// merged though their records do not know it yet; claim lets them be.
	merged []string
}

// begin decides s. An earlier attempt whose pull request was closed
// without merging does not count: the next attempt is decided instead (see
// attempt). Another rollback whose pull request is open in the same app,
// environment and cluster (another target, or the same one over another
// release), or is being opened, refuses s, naming it (inFlight); the
// transaction that queues the job checks that again under a lock (claim).
func (st *starter) begin(ctx context.Context, gh *github.Client, cfg *repoconfig.Config, repository string, s Start) (begun, error) {
	plan, in, err := st.prepare(ctx, gh, cfg, repository, s)
	if err != nil {
		return begun{}, err
	}
	plan, open, err := st.attempt(ctx, in, plan, true)
	if err != nil || open != nil {
		return begun{plan: plan, open: open}, err
	}
	merged, err := st.inFlight(ctx, plan)
	if err != nil {
		return begun{}, err
	}
	return begun{plan: plan, merged: merged}, nil
}

// maxAttempts bounds how often the same rollback is opened again after its
// pull requests were closed without merging.
const maxAttempts = 20

// attempt returns the plan of the first attempt of this rollback that was
// not withdrawn, with its record when it exists (open: nothing to queue).
// With ask, an opened record's pull request is looked up on GitHub first:
// when ripcord missed its close event, the release is withdrawn now rather
// than offered as "open already" for ever.
func (st *starter) attempt(ctx context.Context, in Input, plan Plan, ask bool) (Plan, *records.Record, error) {
	for n := max(in.Attempt, 1); ; n++ {
		rec, err := st.deps.Records.Get(ctx, plan.Record.ReleaseID)
		if errors.Is(err, records.ErrNotFound) {
			return plan, nil, nil
		}
		if err != nil {
			return Plan{}, nil, err
		}
		if ask && rec.State == records.StateOpened && rec.PRNumber > 0 {
			if rec, err = st.closedMeanwhile(ctx, plan, rec); err != nil {
				return Plan{}, nil, err
			}
		}
		if !rec.Withdrawn() {
			return plan, &rec, nil
		}
		if n >= maxAttempts {
			return Plan{}, nil, refuse("this rollback's pull request was closed without merging %d times; roll back to another release with `to <release-id>`", n)
		}
		in.Attempt = n + 1
		if plan, err = Decide(in); err != nil {
			return Plan{}, nil, err
		}
	}
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
	// The branch is not named: only the job knows it, since a rollback goes
	// to a branch of its own when another rollback of the same target holds
	// the usual one (rollbackpr.OwnBranchName); its answer names it.
	return fmt.Sprintf("Rolling %s back in %s: release `%s` replaces `%s` with `%s` (%s), %s. Opening the pull request in %s; I will post the link and its branch here.",
		p.Record.App, p.Record.Environment, p.Record.ReleaseID, p.Record.RollbackOf, p.Target,
		rollbackpr.ShortSHA(p.Record.GitRevision), verdict, p.Request.Repository)
}

// queueReply answers reply's request where it was made, as the
// pull-request job would have.
func (st *starter) queueReply(ctx context.Context, tx *sql.Tx, reply *ReplyTo, body string) error {
	return answer(ctx, tx, st.deps.River(), reply, body)
}

// releaseLink is " (<url>)", the API address of p's release, when the
// server knows its public URL; "" otherwise.
func releaseLink(p Plan) string {
	for _, l := range p.Request.Rollback.Links {
		if l.Text == "rollback release "+p.Record.ReleaseID {
			return " (" + l.URL + ")"
		}
	}
	return ""
}
