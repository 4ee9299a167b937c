package commands

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/records"
)

// Eyes is the reaction that acknowledges a command.
const Eyes = "eyes"

// handler routes issue_comment deliveries to the runners.
type handler struct {
	deps    pipeline.Deps
	loader  *configload.Loader
	runners map[string]Runner
}

func (*handler) Handles() []string { return []string{"issue_comment"} }

// comment is the part of an issue_comment delivery the handler reads.
type comment struct {
	delivery   pipeline.Delivery
	repository string
	number     int
	id         int64
	user       string
	body       string
}

func (h *handler) Handle(ctx context.Context, d pipeline.Delivery) (pipeline.Commit, error) {
	var ev github.IssueCommentEvent
	if err := json.Unmarshal(d.Body, &ev); err != nil {
		return nil, fmt.Errorf("decode issue_comment event: %w", err)
	}
	// Bots never command ripcord, its own replies (which quote commands) least of all.
	action := ev.GetAction()
	if (action != "created" && action != "edited") || ev.GetComment().GetUser().GetType() == "Bot" || d.InstallationID == 0 {
		return nil, nil
	}
	c := comment{delivery: d, repository: ev.GetRepo().GetFullName(), number: ev.GetIssue().GetNumber(),
		id: ev.GetComment().GetID(), user: ev.GetComment().GetUser().GetLogin(), body: ev.GetComment().GetBody()}
	res := Parse(c.body)
	if action == "edited" {
		return h.edited(c, res), nil
	}
	if !ev.GetIssue().IsPullRequest() {
		res = onIssue(res, h.pullRequestOnly)
	}
	switch res.Kind {
	case Ignore:
		return nil, nil
	case Reply:
		return h.answer(c, res.Reply, nil), nil
	}
	first, err := h.ranBy(ctx, c)
	if err != nil {
		return nil, err
	}
	if first != "" {
		h.replayed(c, first)
		return nil, nil
	}
	commit, err := h.command(ctx, c, res.Command)
	if commit == nil || err != nil {
		return nil, err
	}
	return h.once(c, commit), nil
}

// editedReply answers a command written by editing a comment.
const editedReply = "ripcord does not run commands from edited comments; post the command as a new comment."

// edited is what an edited comment comes to. Editing an old comment must
// not run it again, but someone who fixes a typo by editing would
// otherwise hear nothing: a comment that holds a command line is answered
// that commands run from new comments only. The reply takes the comment's
// reply key, so a second edit, or an edit of a comment answered already,
// posts nothing more.
func (h *handler) edited(c comment, res Result) pipeline.Commit {
	if res.Kind == Ignore {
		return nil
	}
	return h.answer(c, editedReply, nil)
}

// pullRequestOnly reports whether the command has a runner that works in
// pull request comments only: one that is not an IssueRunner saying yes.
func (h *handler) pullRequestOnly(name string) bool {
	r, ok := h.runners[name]
	if !ok {
		return false // answered "not available yet", wherever it is asked
	}
	ir, ok := r.(IssueRunner)
	return !ok || !ir.RunsOnIssues()
}

// onIssue is what a comment on an issue (not a pull request) comes to.
// Help and typos are answered as anywhere. A command that needs a pull
// request (retry re-runs the runs of its head commit) is answered that it
// does, rather than ignored: a comment left without a word looks like
// ripcord is down.
func onIssue(res Result, pullRequestOnly func(name string) bool) Result {
	if res.Kind != Run || !pullRequestOnly(res.Command.Name) {
		return res
	}
	return Result{Kind: Reply, Reply: fmt.Sprintf("`%s %s` works in pull request comments only, not on issues: "+
		"write it in a comment on the pull request it is about.", Prefix, res.Command.Name)}
}

// command checks the config and the user's permission, then runs the
// command; a Prechecker's refusal comes first, before any GitHub call.
func (h *handler) command(ctx context.Context, c comment, cmd Command) (pipeline.Commit, error) {
	runner, ok := h.runners[cmd.Name]
	if !ok {
		return h.answer(c, fmt.Sprintf("`%s %s` is not available yet in this version of ripcord.", Prefix, cmd.Name),
			h.audit(c, cmd, records.AuditCommandRefused, "not available yet")), nil
	}
	if pc, ok := runner.(Prechecker); ok {
		reply, err := pc.Precheck(ctx, cmd)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", Prefix, cmd.Name, err)
		}
		if reply != "" {
			return h.answer(c, reply, h.audit(c, cmd, records.AuditCommandRefused, reply)), nil
		}
	}
	gh, err := h.deps.GitHub.NewInstallationClient(c.delivery.InstallationID)
	if err != nil {
		return nil, fmt.Errorf("github client for installation %d: %w", c.delivery.InstallationID, err)
	}
	cfg, err := h.loader.Load(ctx, gh.Repositories, c.repository, "")
	if err != nil {
		return nil, err
	}
	if !cfg.Valid() {
		why := fmt.Sprintf("ripcord cannot run `%s %s` here: %s.", Prefix, cmd.Name, cfg.Explain(c.repository))
		return h.answer(c, why, h.audit(c, cmd, records.AuditCommandRefused, why)), nil
	}
	need, _ := cfg.Config.CommandPermission(cmd.Name)
	v, err := CheckPermission(ctx, gh.Repositories, c.repository, c.user, cmd.Name, need)
	if err != nil {
		return nil, err
	}
	if !v.Allowed {
		return h.answer(c, "Refused: "+v.Reason, h.audit(c, cmd, records.AuditCommandRefused, v.Reason)), nil
	}
	out, err := runner.Run(ctx, Invocation{
		DeliveryID: c.delivery.ID, Repository: c.repository, InstallationID: c.delivery.InstallationID,
		PullRequest: c.number, CommentID: c.id, User: c.user, Command: cmd, Config: cfg, GitHub: gh, Now: h.deps.Now(),
	})
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", Prefix, cmd.Name, err)
	}
	received := h.audit(c, cmd, records.AuditCommandReceived, v.Reason)
	return h.answer(c, out.Reply, chain(received, out.Commit)), nil
}

// answer acknowledges the comment with 👀, queues the reply (if any) and
// runs then, all in the delivery's transaction.
func (h *handler) answer(c comment, reply string, then pipeline.Commit) pipeline.Commit {
	return func(ctx context.Context, tx *sql.Tx) error {
		rc := h.deps.River()
		if err := QueueReaction(ctx, tx, rc, ReactionArgs{Repository: c.repository, CommentID: c.id, Content: Eyes,
			InstallationID: c.delivery.InstallationID}); err != nil {
			return err
		}
		if strings.TrimSpace(reply) != "" {
			err := QueueReply(ctx, tx, rc, ReplyArgs{Repository: c.repository, Number: c.number, InstallationID: c.delivery.InstallationID,
				Key: fmt.Sprintf("comment-%d", c.id), Body: fmt.Sprintf("@%s %s", c.user, reply)})
			if err != nil {
				return err
			}
		}
		if then != nil {
			return then(ctx, tx)
		}
		return nil
	}
}

func (h *handler) audit(c comment, cmd Command, typ records.AuditType, why string) pipeline.Commit {
	return func(ctx context.Context, tx *sql.Tx) error {
		msg := fmt.Sprintf("@%s commented `%s` on %s#%d", c.user, cmd.Line, c.repository, c.number)
		if typ == records.AuditCommandRefused {
			msg += "; refused: " + why
		}
		return h.deps.Records.InsertAudit(ctx, tx, records.AuditEvent{
			Type: typ, DeliveryID: c.delivery.ID, At: h.deps.Now(), Message: msg,
			Data: map[string]any{"command": cmd.Name, "user": c.user, "repository": c.repository,
				"pull_request": c.number, "comment_id": c.id},
		})
	}
}

// chain runs commits in order, skipping nil ones.
func chain(cs ...pipeline.Commit) pipeline.Commit {
	return func(ctx context.Context, tx *sql.Tx) error {
		for _, c := range cs {
			if c == nil {
				continue
			}
			if err := c(ctx, tx); err != nil {
				return err
			}
		}
		return nil
	}
}
