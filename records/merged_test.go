package records

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// forPR makes r the release of pull request number of acme/gitops, as a
// rollback pull request that ripcord opened is.
func forPR(number int) func(*Record) {
	return func(r *Record) {
		r.PRNumber, r.PRURL = number, "https://github.com/acme/gitops/pull/"+strconv.Itoa(number)
	}
}

// A release opened for a pull request can run only once the pull request
// is merged, so its stall clock (seed 003, decision 6: "a record merged
// with no fact for N minutes") starts at the merge; until then it never
// stalls. A release opened without a pull request stalls from its opening.
func TestStallClockOfAPullRequestReleaseStartsAtItsMerge(t *testing.T) {
	t.Parallel()
	unmerged := record("R1", StateOpened, 0, rollbackOf("R0"), forPR(7))
	merged := record("R1", StateOpened, 0, rollbackOf("R0"), forPR(7), func(r *Record) { r.MergedAt = ptime(at(30)) })
	for _, tc := range []struct {
		name string
		r    Record
		now  time.Time
		want bool
	}{
		{"unmerged pull request, opened 2h ago: waiting for review, not stalled", unmerged, at(120), false},
		{"merged 14m ago: not yet", merged, at(44), false},
		{"merged 15m ago with no fact: stalled", merged, at(45), true},
		{"no pull request: stalls from its opening", record("R1", StateOpened, 0), at(15), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := CheckStall(tc.r, tc.now, 15*time.Minute)
			if got != tc.want {
				t.Fatalf("CheckStall = %v (%q), want %v", got, reason, tc.want)
			}
			if got && tc.r.MergedAt != nil && !strings.Contains(reason, "merged") {
				t.Errorf("reason %q should say the clock started at the merge", reason)
			}
		})
	}
}

// The stored side, on both databases: the stall scan skips the release of
// an unmerged pull request however old, MarkMerged starts its clock, and
// it stalls stall_after after the merge and not before.
func TestUnmergedPullRequestReleaseDoesNotStallUntilMerged(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		openRelease(t, s, record("pr", StateOpened, 0, rollbackOf("R0"), forPR(7)))
		openRelease(t, s, record("other-pr", StateOpened, 0, rollbackOf("R0"), forPR(8)))
		openRelease(t, s, record("no-pr", StateOpened, 0))
		ctx := context.Background()
		candidates := func(m int) []string {
			t.Helper()
			page, err := s.StallCandidates(ctx, at(m).Add(-15*time.Minute), StallCandidate{}, 10)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range page {
				got = append(got, c.ReleaseID)
			}
			return got
		}
		if got := candidates(20); !slices.Equal(got, []string{"no-pr"}) {
			t.Errorf("candidates at minute 20 = %v, want only the release without a pull request", got)
		}
		if _, _, ok, err := markStalled(t, s, "pr", at(20)); err != nil || ok {
			t.Errorf("unmerged pull request's release stalled = %v (%v), want false", ok, err)
		}

		var marked []string
		err := s.db.InTx(ctx, func(tx *sql.Tx) error {
			var err error
			marked, err = s.MarkMerged(ctx, tx, "acme/gitops", "https://github.com/acme/gitops/pull/7", 7, at(30))
			return err
		})
		if err != nil || !slices.Equal(marked, []string{"pr"}) {
			t.Fatalf("MarkMerged = %v, %v; want [pr]", marked, err)
		}
		if got := candidates(44); slices.Contains(got, "pr") {
			t.Errorf("candidates 14m after the merge = %v, want no pr yet", got)
		}
		if _, _, ok, err := markStalled(t, s, "pr", at(44)); err != nil || ok {
			t.Errorf("14m after the merge: stalled = %v (%v), want false", ok, err)
		}
		if got := candidates(45); !slices.Contains(got, "pr") || slices.Contains(got, "other-pr") {
			t.Errorf("candidates 15m after the merge = %v, want pr and not other-pr", got)
		}
		ev, _, ok, err := markStalled(t, s, "pr", at(45))
		if err != nil || !ok || !strings.Contains(ev.Message, "merged") {
			t.Errorf("15m after the merge: stalled = %v (%v), event %q; want a stall since the merge", ok, err, ev.Message)
		}
		if _, _, ok, err := markStalled(t, s, "other-pr", at(120)); err != nil || ok {
			t.Errorf("another, unmerged pull request's release stalled = %v (%v), want false", ok, err)
		}
	})
}
