package rolloutflow

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ripcord/ripcord/app/commands"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/mdtext"
)

// ApproveCommand is `/ripcord approve <rollout>` in a pull request or issue
// comment. Hand it to commands.Register, which checks the commenter's
// permission (commands.approve) before Run.
func ApproveCommand(d pipeline.Deps) commands.Runner { return approveCommand{x: newExecutor(d)} }

type approveCommand struct{ x *executor }

func (approveCommand) Name() string { return commands.Approve }

// RunsOnIssues lets the command run in issue comments too.
func (approveCommand) RunsOnIssues() bool { return true }

// Precheck refuses, before the commenter's permission is asked of GitHub,
// an approval of a rollout that waits for none (voteCannotCount), or of
// no rollout. Run checks again (prepareVote).
func (c approveCommand) Precheck(ctx context.Context, cmd commands.Command) (string, error) {
	if len(cmd.Args) == 0 {
		return "", nil // Run says what to write
	}
	r, err := getRollout(ctx, c.x.deps.DB.Read, cmd.Args[0])
	if err == nil {
		err = voteCannotCount(r)
	}
	return c.refusal(cmd.Args[0], err)
}

// refusal is the reply to an approval refused with err, "" when err is
// nil; an error that is no refusal is returned.
func (approveCommand) refusal(id string, err error) (string, error) {
	var refused *Refused
	switch {
	case errors.Is(err, ErrNotFound):
		// The id is the commenter's text: as code, so it mentions no one.
		return "There is no rollout " + mdtext.CodeSpan(id) + ".", nil
	case errors.As(err, &refused):
		return "Not approved: " + refused.Reason + ".", nil
	}
	return "", err
}

func (c approveCommand) Run(ctx context.Context, inv commands.Invocation) (commands.Outcome, error) {
	if len(inv.Command.Args) == 0 {
		return commands.Outcome{Reply: "Which rollout? Write `/ripcord approve <rollout id>` (the id is in the ripcord/rollout check run)."}, nil
	}
	id := inv.Command.Args[0]
	comment := strings.Join(inv.Command.Args[1:], " ")
	// The line is the commenter's text: a backtick in it must not end the span.
	via := fmt.Sprintf("%s on %s#%d", mdtext.CodeSpan(inv.Command.Line), inv.Repository, inv.PullRequest)
	reply, commit, err := c.x.prepareVote(ctx, id, inv.User, true, comment, via)
	if err != nil {
		no, err := c.refusal(id, err)
		return commands.Outcome{Reply: no}, err
	}
	return commands.Outcome{Reply: reply + ".", Commit: commit}, nil
}
