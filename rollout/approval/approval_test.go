package approval

import (
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/rollout"
)

var (
	requested = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	authors   = []string{"alice", "Bob"} // author and merger
)

func after(d time.Duration) time.Time { return requested.Add(d) }

func TestDecide(t *testing.T) {
	one := rollout.Approvals{Permission: "write", Count: 1, Expiry: 72 * time.Hour}
	two := rollout.Approvals{Permission: "write", Count: 2, Expiry: 24 * time.Hour}
	tests := []struct {
		name   string
		p      rollout.Approvals
		votes  []Approval
		now    time.Time
		want   State
		reason string
	}{
		{"no vote yet", one, nil, after(time.Hour), Pending, "waiting for 0 of 1 approvals until 2026-12-02T10:00:00Z"},
		{"one approval of one", one, []Approval{{"carol", true, after(time.Minute)}}, after(time.Hour), Approved, "approved by carol"},
		{"the author approving their own release does not count", one, []Approval{{"alice", true, after(time.Minute)}}, after(time.Hour), Pending, "0 of 1"},
		{"the merger approving, in another case, does not count", one, []Approval{{"bob", true, after(time.Minute)}}, after(time.Hour), Pending, "0 of 1"},
		{"the author cannot reject on others' behalf either", one, []Approval{{"alice", false, after(time.Minute)}}, after(time.Hour), Pending, "0 of 1"},
		{"one approval of two is pending", two, []Approval{{"carol", true, after(time.Minute)}}, after(time.Hour), Pending, "1 of 2 approvals (carol)"},
		{"the same user twice counts once", two, []Approval{{"carol", true, after(time.Minute)}, {"Carol", true, after(2 * time.Minute)}}, after(time.Hour), Pending, "1 of 2"},
		{"two users approve", two, []Approval{{"dave", true, after(2 * time.Minute)}, {"carol", true, after(time.Minute)}}, after(time.Hour), Approved, "approved by carol, dave"},
		{"a rejection rejects", two, []Approval{{"carol", true, after(time.Minute)}, {"dave", false, after(2 * time.Minute)}}, after(time.Hour), Rejected, "rejected by dave"},
		{"a rejection after approval was reached comes too late", one, []Approval{{"dave", false, after(2 * time.Minute)}, {"carol", true, after(time.Minute)}}, after(time.Hour), Approved, "approved by carol"},
		{"no decision by the expiry expires", two, []Approval{{"carol", true, after(time.Minute)}}, after(24 * time.Hour), Expired, "expired at 2026-11-30T10:00:00Z with 1 of 2 approvals"},
		{"an approval at the expiry is too late", rollout.Approvals{Count: 1, Expiry: 24 * time.Hour}, []Approval{{"carol", true, after(24 * time.Hour)}}, after(25 * time.Hour), Expired, "with 0 of 1 approvals"},
		{"an approval from before the request is an old pause's", one, []Approval{{"carol", true, requested.Add(-time.Second)}}, after(time.Hour), Pending, "0 of 1"},
		{"a vote recorded after now is not seen yet", one, []Approval{{"carol", true, after(2 * time.Hour)}}, after(time.Hour), Pending, "0 of 1"},
		{"defaults fill a zero policy: 72 hours", rollout.Approvals{}, nil, after(71 * time.Hour), Pending, "until 2026-12-02T10:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := Decide(tt.p, authors, requested, tt.votes, tt.now)
			if got != tt.want || !strings.Contains(reason, tt.reason) {
				t.Errorf("got %s %q, want %s …%s…", got, reason, tt.want, tt.reason)
			}
		})
	}
}

func TestCanVote(t *testing.T) {
	maintain := rollout.Approvals{Permission: "maintain"}
	tests := []struct {
		name       string
		p          rollout.Approvals
		user, perm string
		refusal    string // "" when the vote is allowed
	}{
		{"write may approve by default", rollout.Approvals{}, "carol", "write", ""},
		{"admin is above maintain", maintain, "carol", "admin", ""},
		{"maintain meets maintain", maintain, "carol", "maintain", ""},
		{"write is below maintain", maintain, "carol", "write", "carol cannot approve this rollout: they have write permission on the repository, and approvals.permission needs maintain or above"},
		{"triage cannot approve a deploy", rollout.Approvals{}, "carol", "triage", "they have triage permission"},
		{"GitHub's none is refused", rollout.Approvals{}, "carol", "none", "they have none permission"},
		{"no permission at all is refused", rollout.Approvals{}, "carol", "", "they have no permission"},
		{"the author is refused whatever their role", rollout.Approvals{}, "alice", "admin", "alice cannot approve this rollout: they authored or merged the release"},
		{"the merger is refused in any case", rollout.Approvals{}, "BOB", "admin", "authored or merged"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CanVote(tt.p, authors, tt.user, tt.perm)
			switch {
			case tt.refusal == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.refusal != "" && (err == nil || !strings.Contains(err.Error(), tt.refusal)):
				t.Errorf("got %v, want …%s…", err, tt.refusal)
			}
		})
	}
}
