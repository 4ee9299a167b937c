package rollbackpr_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/rollbackpr"
)

// Two apps of one monorepo, built from the same commit, rolled back in the
// same environment of one GitOps repository: the branch name
// (release-rollback-<env>-<sha8>) is the same. The second rollback must not
// take the branch and the open pull request of the first (force-moving the
// branch to its own commit and retitling the pull request, so the first
// app's rollback is silently gone, with any commits a person pushed on top
// of it): it fails, naming the pull request in the way, and touches
// nothing.
func TestOpenDoesNotTakeOverAnotherAppsOpenRollback(t *testing.T) {
	for _, tt := range []struct {
		name string
		hand int // commits a person pushed on the first app's rollback commit
	}{
		{"its rollback commit at the head", 0},
		{"commits pushed by hand on top of it", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			gh, _ := newRepo(t)
			const paymentsFile = "apps/payments/prod/release.yaml"
			gh.Push(gitops, "main", "payments", map[string]string{paymentsFile: strings.ReplaceAll(releaseYAML, "checkout", "payments")})
			first, err := rollbackpr.Open(context.Background(), gh, nil, request())
			if err != nil {
				t.Fatal(err)
			}
			for i := range tt.hand {
				gh.Push(gitops, first.Branch, "hand edit", map[string]string{"apps/checkout/NOTES.md": strings.Repeat("pinned\n", i+1)})
			}
			head, _ := gh.Branch(gitops, first.Branch)

			other := request()
			other.File = paymentsFile
			other.Rollback.App, other.Rollback.Image = "payments", "ghcr.io/acme/payments"
			other.Rollback.ReleaseID, other.Rollback.RollbackOf = "rb-99:prod-eu/prod", "pay-42:prod-eu/prod"
			res, err := rollbackpr.Open(context.Background(), gh, nil, other)
			if err == nil || !strings.Contains(err.Error(), first.URL) {
				t.Errorf("second Open = %+v, %v; want an error naming %s", res, err, first.URL)
			}
			if err != nil && !rollbackpr.Permanent(err) {
				t.Errorf("Permanent(%v) = false: retrying would only take the branch over later", err)
			}
			if now, _ := gh.Branch(gitops, first.Branch); now != head {
				t.Errorf("branch %s moved from %s to %s", first.Branch, head, now)
			}
			prs := gh.PullRequests(gitops)
			if len(prs) != 1 || !strings.Contains(prs[0].Title, "checkout") {
				t.Errorf("pull requests = %+v, want checkout's one untouched", prs)
			}
		})
	}
}

// Two environments whose names fold to one branch name ("prod eu" and "prod-eu") roll
// back to the same commit: the second is refused as for another app, and the refusal
// says what holds the branch, another rollback of another app or environment, naming
// the branch, rather than blaming an app that is the same.
func TestOpenRefusesAnotherEnvironmentsOpenRollbackOnItsBranch(t *testing.T) {
	gh, _ := newRepo(t)
	req := request()
	req.Rollback.Environment = "prod-eu"
	first, err := rollbackpr.Open(context.Background(), gh, nil, req)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := gh.Branch(gitops, first.Branch)

	other := request()
	other.Rollback.Environment = "prod eu"
	other.Rollback.ReleaseID, other.Rollback.RollbackOf = "rb-99:prod-eu/prod", "r-42:prod-eu/prod"
	if b := rollbackpr.BranchName(other.Rollback.Environment, other.Rollback.GitRevision); b != first.Branch {
		t.Fatalf("branch of %q = %s, want it to fold to %s", other.Rollback.Environment, b, first.Branch)
	}
	_, err = rollbackpr.Open(context.Background(), gh, nil, other)
	if err == nil || !rollbackpr.Permanent(err) {
		t.Fatalf("second Open: %v, want a permanent refusal", err)
	}
	msg := err.Error()
	for _, want := range []string{"branch " + first.Branch + " holds another rollback (of another app or environment)", first.URL} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "another app's rollback") {
		t.Errorf("refusal %q calls the same app's rollback another app's", msg)
	}
	if now, _ := gh.Branch(gitops, first.Branch); now != head {
		t.Errorf("branch %s moved from %s to %s", first.Branch, head, now)
	}
}
