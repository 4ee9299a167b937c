package commands

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/repoconfig"
)

func TestAllow(t *testing.T) {
	cases := []struct {
		name             string
		role, permission string
		need             repoconfig.Permission
		allowed          bool
		reason           string
	}{
		{"a writer may retry", "write", "write", repoconfig.PermissionWrite, true, "has write access"},
		{"an admin may do what maintain needs", "admin", "admin", repoconfig.PermissionMaintain, true, ""},
		{"a maintainer reported as legacy write may approve", "maintain", "write", repoconfig.PermissionMaintain, true, ""},
		{"a reader may not retry", "read", "read", repoconfig.PermissionWrite, false, "@mona has read access; `/ripcord retry` needs write (set under `commands.retry`"},
		{"triage is below write", "triage", "read", repoconfig.PermissionWrite, false, "has triage access"},
		{"a custom role falls back to the legacy level", "release-manager", "write", repoconfig.PermissionWrite, true, ""},
		{"no access at all", "", "none", repoconfig.PermissionRead, false, "has no access to this repository that ripcord recognises"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Allow("mona", Retry, c.role, c.permission, c.need)
			if v.Allowed != c.allowed || !strings.Contains(v.Reason, c.reason) {
				t.Errorf("Allow = %+v, want allowed %v with reason containing %q", v, c.allowed, c.reason)
			}
		})
	}
}

// fakePermissions answers GetPermissionLevel from a map, Prow style.
type fakePermissions struct {
	roles map[string]string
	asked []string
}

func (f *fakePermissions) GetPermissionLevel(_ context.Context, owner, repo, user string) (*github.RepositoryPermissionLevel, *github.Response, error) {
	f.asked = append(f.asked, owner+"/"+repo+":"+user)
	role, ok := f.roles[user]
	if !ok {
		return nil, nil, errors.New("boom")
	}
	return &github.RepositoryPermissionLevel{RoleName: &role, Permission: &role}, nil, nil
}

func TestCheckPermissionAsksAboutTheUserOnTheRepository(t *testing.T) {
	f := &fakePermissions{roles: map[string]string{"mona": "write"}}
	v, err := CheckPermission(context.Background(), f, "acme/checkout", "mona", Retry, repoconfig.PermissionWrite)
	if err != nil || !v.Allowed || len(f.asked) != 1 || f.asked[0] != "acme/checkout:mona" {
		t.Fatalf("CheckPermission = %+v, %v; asked %v", v, err, f.asked)
	}
	if _, err := CheckPermission(context.Background(), f, "acme/checkout", "ghost", Retry, repoconfig.PermissionWrite); err == nil ||
		!strings.Contains(err.Error(), "ghost") {
		t.Errorf("a failed lookup must be an error naming the user, got %v", err)
	}
}

// GitHub answers 404 for a user it knows no permission of (an account
// deleted since it commented). That is a refusal to explain, not an error
// to retry: retried, the delivery would fail in the end and the comment
// would stay unanswered.
func TestCheckPermissionRefusesAUserGitHubDoesNotKnow(t *testing.T) {
	gh := githubtest.NewServer(t)
	gh.Handle("GET /repos/{owner}/{repo}/collaborators/{username}/permission", func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"message":"Not Found","documentation_url":"https://docs.github.com/rest"}`))
	})
	v, err := CheckPermission(context.Background(), gh.Client().Repositories, "acme/checkout", "ghost", Rollback, repoconfig.PermissionWrite)
	if err != nil {
		t.Fatalf("CheckPermission on a 404 = %v, want a refusal", err)
	}
	if v.Allowed || !strings.Contains(v.Reason, "@ghost has no access to this repository that ripcord recognises") {
		t.Errorf("CheckPermission on a 404 = %+v, want refused as without access", v)
	}
}
