package rolloutflow_test

import (
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// Three waves with an approval after each of the first two.
var twoApprovalsConfig = strings.Replace(strings.Replace(e2eConfig,
	"          - {host: eu1-b-01, labels: {region: eu-1, az: eu-1b}}\n",
	"          - {host: eu1-b-01, labels: {region: eu-1, az: eu-1b}}\n          - {host: eu1-c-01, labels: {region: eu-1, az: eu-1c}}\n", 1),
	"            - {name: rest, select: \"canary!=true\"}\n          approvals_between: [canary]\n",
	"            - {name: b, select: \"az=eu-1b\"}\n            - {name: c, select: \"az=eu-1c\"}\n          approvals_between: [canary, b]\n", 1)

// GitHub signs a delivery's body, not its X-GitHub-Delivery id, so a click
// someone captured can be posted again under a new id. bob's click that
// approved the first pause, posted again at the second, is refused there
// (its check run named the first pause) and the rollout keeps waiting; a
// click on the check run GitHub shows at the second pause approves it.
func TestApproveClickPostedAgainAtTheNextPauseIsRefused(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := atFirstApproval(t, dbURL, twoApprovalsConfig, "write")
		e := s.Env
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("the rollout's audit trail:\n%s", auditText(s.status()))
			}
		})
		s.settle()
		captured := s.clickBody("bob")
		s.Deliver("check_run", captured)
		s.finish(2)
		// The check run must name the second pause: until it is written
		// again, GitHub still shows the first pause's, button and all.
		e.WaitFor("the second approval button", wait, func() bool {
			cr, _ := s.check()
			return s.approveShown() && strings.HasSuffix(cr.ExternalID, "/approval-1") &&
				s.status().Rollout.Status == rolloutflow.PausedApproval && len(e.GitHub.Dispatches(repo)) == 2
		})
		s.settle()

		replay := s.Deliver("check_run", captured) // the first click's bytes under a new delivery id
		s.settle()
		if got := e.String(`SELECT state FROM deliveries WHERE id = $1`, replay); got != "processed" {
			t.Fatalf("the replayed click's delivery ended %q, want processed", got)
		}
		st := s.status()
		if st.Rollout.Status != rolloutflow.PausedApproval || len(e.GitHub.Dispatches(repo)) != 2 {
			t.Fatalf("the first pause's click, posted at the second, moved the rollout: %s, %d dispatches",
				st.Rollout.Status, len(e.GitHub.Dispatches(repo)))
		}
		if n := bobApprovals(st); n != 1 {
			t.Fatalf("bob's approvals in the audit trail = %d, want 1 (the first pause's)", n)
		}
		if !audited(st, "approval-refused", "@bob clicked Approve at the approval after wave canary: refused: that pause is over") {
			t.Errorf("no refusal naming the pause clicked at in the audit trail:\n%s", auditText(st))
		}

		s.click("bob") // on the check run GitHub shows at the second pause
		s.finish(3)
		e.WaitFor("the rollout to succeed", wait, func() bool { return s.status().Rollout.Status == rolloutflow.Succeeded })
		if n := bobApprovals(s.status()); n != 2 {
			t.Errorf("bob's approvals in the audit trail = %d, want 2", n)
		}
	})
}

// A rollout that paused before check runs named their pause shows a check
// run whose external id is the rollout's id alone: a click on it counts
// while that check run is the one shown, unchanged; a click on an older
// one of the rollout's check runs does not.
func TestApproveClickOnACheckRunWithoutItsPauseCountsWhileItIsShown(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := atFirstApproval(t, dbURL, e2eConfig, "write")
		e := s.Env
		s.settle()
		// The check run as the release before wrote it at this pause.
		shown, _ := s.check()
		old := e.GitHub.AddCheckRun(repo, githubtest.CheckRun{Name: rolloutflow.CheckName, HeadSHA: headSHA, ExternalID: s.id,
			Status: "completed", Conclusion: "action_required", Title: shown.Title, Summary: shown.Summary, Actions: shown.Actions,
			StartedAt: shown.StartedAt, CompletedAt: shown.CompletedAt})
		unmarked := shown
		unmarked.ExternalID = s.id
		stale := clickOn(t, unmarked, "bob")
		e.Exec(`UPDATE rollouts SET check_run_id = $1 WHERE id = $2`, old.ID, s.id)

		s.Deliver("check_run", stale) // the rollout's id alone, on a check run it no longer shows
		s.settle()
		if st := s.status(); st.Rollout.Status != rolloutflow.PausedApproval || len(e.GitHub.Dispatches(repo)) != 1 || bobApprovals(st) != 0 {
			t.Fatalf("a click on a check run the rollout no longer shows approved: %s, %d dispatches\n%s",
				st.Rollout.Status, len(e.GitHub.Dispatches(repo)), auditText(st))
		} else if !audited(st, "approval-refused", "@bob clicked Approve on a check run written before clicks named their pause: refused: ") {
			t.Errorf("no refusal of the click on the older check run in the audit trail:\n%s", auditText(st))
		}

		s.Deliver("check_run", clickOn(t, old, "bob"))
		s.finish(2)
		e.WaitFor("the rollout to succeed", wait, func() bool { return s.status().Rollout.Status == rolloutflow.Succeeded })
		if n := bobApprovals(s.status()); n != 1 {
			t.Errorf("bob's approvals in the audit trail = %d, want 1", n)
		}
	})
}

func bobApprovals(st rolloutflow.StatusJSON) int {
	n := 0
	for _, l := range st.Audit {
		if strings.Contains(l.Message, "@bob approved wave") {
			n++
		}
	}
	return n
}

func audited(st rolloutflow.StatusJSON, kind, prefix string) bool {
	for _, l := range st.Audit {
		if l.Type == kind && strings.HasPrefix(l.Message, prefix) {
			return true
		}
	}
	return false
}

func auditText(st rolloutflow.StatusJSON) string {
	var b strings.Builder
	for _, l := range st.Audit {
		b.WriteString(l.Type + ": " + l.Message + "\n")
	}
	return b.String()
}
