package rolloutflow

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/commands"
)

// The rollout id in `/ripcord approve <id>` is whatever the commenter
// typed: echoed in quotes, an id such as "@acme/security" would have
// ripcord's reply mention that team. It is echoed as code, which no
// backtick in it can end.
func TestAnUnknownRolloutIsEchoedAsCode(t *testing.T) {
	t.Parallel()
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

// The command line goes into the audit trail as code; a backtick the
// commenter typed must not end the span and turn the rest into markdown.
func TestTheApprovingLineIsAuditedAsCode(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "stop", "canary", time.Minute)
	h.start(nil)
	h.run(func(r Rollout) bool { return r.Machine.Status == PausedApproval })
	line := "/ripcord approve " + h.id + " ok `@acme/security` said so"
	out, err := approveCommand{x: h.x}.Run(context.Background(), commands.Invocation{Repository: testRepo, PullRequest: 7,
		User: "bob", Command: commands.Command{Name: commands.Approve, Args: strings.Fields(line)[2:], Line: line}})
	if err != nil || out.Commit == nil {
		t.Fatalf("reply %q, err %v: want the approval to be taken", out.Reply, err)
	}
	if err := h.x.deps.DB.InTx(context.Background(), func(tx *sql.Tx) error { return out.Commit(context.Background(), tx) }); err != nil {
		t.Fatal(err)
	}
	want := "(`` " + line + " `` on " + testRepo + "#7)"
	if got := h.auditOf("approved"); len(got) != 1 || !strings.Contains(got[0], want) {
		t.Errorf("audit %q, want one approval quoting the line as %q", got, want)
	}
}
