package rolloutflow

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/commands"
)

// An approver's note is free text (markdown, @mentions, line breaks) kept
// exact in the audit trail, which only the API, the CLI and the release's
// page show. Nothing ripcord writes to GitHub quotes it: not the reply to
// the command, not the ripcord/rollout check run, whether the vote let the
// rollout go on or stopped it. Were it quoted there, the commenter could
// mention whoever they chose through ripcord, or break the table it sits in.
func TestAnApproversNoteIsNotEchoedToGitHub(t *testing.T) {
	t.Parallel()
	const note = "ok @acme/security\n| broken | table |\n[x](https://example.invalid)"
	for _, approve := range []bool{true, false} {
		name := map[bool]string{true: "approved by a comment", false: "rejected through the API"}[approve]
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, "stop", "canary", time.Minute)
			h.start(nil)
			h.run(func(r Rollout) bool { return r.Machine.Status == PausedApproval })
			ctx := context.Background()
			var reply string
			if approve {
				line := "/ripcord approve " + h.id + " " + note
				out, err := approveCommand{x: h.x}.Run(ctx, commands.Invocation{Repository: testRepo, PullRequest: 7,
					User: "bob", Command: commands.Command{Name: commands.Approve, Args: append([]string{h.id}, note), Line: line}})
				if err != nil || out.Commit == nil {
					t.Fatalf("reply %q, err %v: want the approval to be taken", out.Reply, err)
				}
				if err := h.x.deps.DB.InTx(ctx, func(tx *sql.Tx) error { return out.Commit(ctx, tx) }); err != nil {
					t.Fatal(err)
				}
				reply = out.Reply
			} else {
				var err error
				if reply, err = h.x.vote(ctx, h.id, "bob", false, note, "API"); err != nil {
					t.Fatal(err)
				}
			}
			r := h.run(nil)
			if want := map[bool]Status{true: Succeeded, false: Failed}[approve]; r.Machine.Status != want {
				t.Fatalf("the rollout ended %s, want %s", r.Machine.Status, want)
			}
			w, job := checkJob(h)
			if err := w.Work(ctx, job); err != nil {
				t.Fatal(err)
			}
			verb := map[bool]string{true: "approved", false: "rejected"}[approve]
			got := h.auditOf(verb)
			if !slices.ContainsFunc(got, func(l string) bool { return strings.HasSuffix(l, "): "+note) }) {
				t.Errorf("audit %q: want the vote's line to keep the note exact", got)
			}
			shown := []string{reply}
			for _, cr := range h.gh.CheckRuns(testRepo) {
				shown = append(shown, cr.Title, cr.Summary, cr.Text)
			}
			if len(shown) < 2 {
				t.Fatal("no check run written")
			}
			for _, s := range shown {
				if strings.Contains(s, "@acme") || strings.Contains(s, "broken") || strings.Contains(s, "example.invalid") {
					t.Errorf("GitHub is shown the approver's note: %q", s)
				}
			}
		})
	}
}
