// Package approval decides the approval a rollout waits for after a wave in
// approvals_between (seed 001, "Approvazioni e freeze"): who may vote, and
// whether the votes so far approve, reject or let the request expire. It is
// pure: votes and the clock come from the caller.
package approval

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ripcord/ripcord/rollout"
)

// State is where an approval request stands.
type State string

const (
	Pending  State = "pending"
	Approved State = "approved"
	Rejected State = "rejected"
	Expired  State = "expired"
)

// Approval is one vote: an approval or a rejection by a GitHub user.
type Approval struct {
	User    string    `json:"user"`
	Approve bool      `json:"approve"`
	At      time.Time `json:"at"`
}

// permissions are GitHub's repository roles, lowest first.
var permissions = []string{"read", "triage", "write", "maintain", "admin"}

// CanVote says whether user, holding the repository role permission, may
// vote on a rollout of a release whose author and merger are authors; the
// error is the refusal to show the user. Logins compare without case, as
// GitHub's do.
func CanVote(p rollout.Approvals, authors []string, user, permission string) error {
	need := cmp.Or(p.Permission, rollout.DefaultApprovalPermission)
	if isAuthor(authors, user) {
		return fmt.Errorf("%s cannot approve this rollout: they authored or merged the release, and nobody approves their own release", user)
	}
	have, least := rank(permission), rank(need)
	if have < 0 || have < least {
		shown := cmp.Or(permission, "no")
		return fmt.Errorf("%s cannot approve this rollout: they have %s permission on the repository, and approvals.permission needs %s or above", user, shown, need)
	}
	return nil
}

func rank(permission string) int {
	return slices.Index(permissions, strings.ToLower(permission))
}

func isAuthor(authors []string, user string) bool {
	return slices.ContainsFunc(authors, func(a string) bool { return a != "" && strings.EqualFold(a, user) })
}

// Decide reads the votes cast on a request made at requestedAt. Votes are
// taken in time order and the first decision stands: a rejection rejects,
// and p.Count approvals from different users approve. Votes by the
// release's author or merger, from before the request or after it expired,
// do not count; a user who votes twice counts once. Without a decision the
// request is expired from requestedAt+p.Expiry on, else pending. The string
// says why, for the check run and the audit.
func Decide(p rollout.Approvals, releaseAuthors []string, requestedAt time.Time, votes []Approval, now time.Time) (State, string) {
	p = (&p).WithDefaults()
	deadline := requestedAt.Add(p.Expiry)
	ordered := slices.Clone(votes)
	slices.SortStableFunc(ordered, func(a, b Approval) int { return a.At.Compare(b.At) })
	var approvers []string
	for _, v := range ordered {
		if v.At.Before(requestedAt) || !v.At.Before(deadline) || v.At.After(now) || isAuthor(releaseAuthors, v.User) {
			continue
		}
		if !v.Approve {
			return Rejected, fmt.Sprintf("rejected by %s", v.User)
		}
		if !slices.ContainsFunc(approvers, func(a string) bool { return strings.EqualFold(a, v.User) }) {
			approvers = append(approvers, v.User)
		}
		if len(approvers) >= p.Count {
			return Approved, "approved by " + strings.Join(approvers, ", ")
		}
	}
	if !now.Before(deadline) {
		return Expired, fmt.Sprintf("expired at %s with %d of %d approvals", deadline.UTC().Format(time.RFC3339), len(approvers), p.Count)
	}
	status := fmt.Sprintf("%d of %d approvals", len(approvers), p.Count)
	if len(approvers) > 0 {
		status += " (" + strings.Join(approvers, ", ") + ")"
	}
	return Pending, fmt.Sprintf("waiting for %s until %s", status, deadline.UTC().Format(time.RFC3339))
}
