package rolloutflow

import (
	"context"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/commands"
)

// The rollout id in `/ripcord approve <id>` is whatever the commenter
// typed: echoed in quotes, an id such as "@acme/security" would have
// ripcord's reply mention that team. It is echoed as code, which no
// backtick in it can end.
func TestAnUnknownRolloutIsEchoedAsCode(t *testing.T) {
	h := newHarness(t, "stop", "", time.Minute)
	for _, c := range []struct{ name, id, want string }{
		{"a team mention", "@acme/security", "There is no rollout `@acme/security`."},
		{"a backtick that would end the span", "x`@acme/security`", "There is no rollout `` x`@acme/security` ``."},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := approveCommand{x: h.x}.Run(context.Background(), commands.Invocation{Repository: testRepo, PullRequest: 7,
				User: "bob", Command: commands.Command{Name: commands.Approve, Args: []string{c.id}, Line: "/ripcord approve " + c.id}})
			if err != nil {
				t.Fatal(err)
			}
			if out.Reply != c.want || out.Commit != nil {
				t.Errorf("reply %q (commit %v), want %q and nothing done", out.Reply, out.Commit != nil, c.want)
			}
		})
	}
}
