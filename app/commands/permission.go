package commands

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/repoconfig"
)

// PermissionGetter is the one GitHub call the permission check makes;
// *github.Client's Repositories service has it.
type PermissionGetter interface {
	GetPermissionLevel(ctx context.Context, owner, repo, user string) (*github.RepositoryPermissionLevel, *github.Response, error)
}

// Verdict says whether a user may run a command, and why.
type Verdict struct {
	Allowed bool
	Have    repoconfig.Permission // "" when the user has no role ripcord ranks
	Need    repoconfig.Permission
	Reason  string
}

// Allow decides from GitHub's answer: roleName is the user's role
// (role_name: admin, maintain, write, triage, read, or an organisation's
// custom role) and permission the older four-level field (admin, write,
// read, none), used when the role is a custom one.
func Allow(user, command, roleName, permission string, need repoconfig.Permission) Verdict {
	have := rank(roleName)
	if have == "" {
		have = rank(permission)
	}
	v := Verdict{Have: have, Need: need, Allowed: have.Includes(need)}
	switch {
	case v.Allowed:
		v.Reason = fmt.Sprintf("@%s has %s access; `%s %s` needs %s.", user, have, Prefix, command, need)
	case have == "":
		v.Reason = fmt.Sprintf("@%s has no access to this repository that ripcord recognises; `%s %s` needs %s (set under `commands.%s` in `.github/ripcord.yml`).",
			user, Prefix, command, need, command)
	default:
		v.Reason = fmt.Sprintf("@%s has %s access; `%s %s` needs %s (set under `commands.%s` in `.github/ripcord.yml`).",
			user, have, Prefix, command, need, command)
	}
	return v
}

// rank maps GitHub's spelling to a ranked permission, "" for none or a
// custom role.
func rank(s string) repoconfig.Permission {
	p := repoconfig.Permission(strings.ToLower(strings.TrimSpace(s)))
	if p.Includes(repoconfig.PermissionRead) {
		return p
	}
	return ""
}

// CheckPermission asks GitHub for user's permission on repository and decides.
func CheckPermission(ctx context.Context, gh PermissionGetter, repository, user, command string, need repoconfig.Permission) (Verdict, error) {
	owner, repo, _ := strings.Cut(repository, "/")
	lvl, res, err := gh.GetPermissionLevel(ctx, owner, repo, user)
	// 404: GitHub knows no such collaborator (an account deleted since it
	// commented, say). That is an answer, not an outage: refuse with the
	// reason rather than fail the delivery, which would leave the comment
	// unanswered after every retry.
	if err != nil && res != nil && res.StatusCode == http.StatusNotFound {
		return Allow(user, command, "", "none", need), nil
	}
	if err != nil {
		return Verdict{}, fmt.Errorf("permission of %s on %s: %w", user, repository, err)
	}
	return Allow(user, command, lvl.GetRoleName(), lvl.GetPermission(), need), nil
}
