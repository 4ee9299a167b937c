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

func (c approveCommand) Run(ctx context.Context, inv commands.Invocation) (commands.Outcome, error) {
	if len(inv.Command.Args) == 0 {
		return commands.Outcome{Reply: "Which rollout? Write `/ripcord approve <rollout id>` (the id is in the ripcord/rollout check run)."}, nil
	}
	id := inv.Command.Args[0]
	comment := strings.Join(inv.Command.Args[1:], " ")
	// The line is the commenter's text: a backtick in it must not end the span.
	via := fmt.Sprintf("%s on %s#%d", mdtext.CodeSpan(inv.Command.Line), inv.Repository, inv.PullRequest)
	reply, commit, err := c.x.prepareVote(ctx, id, inv.User, true, comment, via)
	var refused *Refused
	switch {
	case errors.Is(err, ErrNotFound):
		// The id is the commenter's text: as code, so it mentions no one.
		return commands.Outcome{Reply: "There is no rollout " + mdtext.CodeSpan(id) + "."}, nil
	case errors.As(err, &refused):
		return commands.Outcome{Reply: "Not approved: " + refused.Reason + "."}, nil
	case err != nil:
		return commands.Outcome{}, err
	}
	return commands.Outcome{Reply: reply + ".", Commit: commit}, nil
}
