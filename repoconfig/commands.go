package repoconfig

// Permission is a GitHub repository role, lowest first.
type Permission string

// GitHub repository roles in increasing order of power.
const (
	PermissionRead     Permission = "read"
	PermissionTriage   Permission = "triage"
	PermissionWrite    Permission = "write"
	PermissionMaintain Permission = "maintain"
	PermissionAdmin    Permission = "admin"
)

var permissionOrder = []Permission{PermissionRead, PermissionTriage, PermissionWrite, PermissionMaintain, PermissionAdmin}

func permissionNames() []string {
	out := make([]string, len(permissionOrder))
	for i, p := range permissionOrder {
		out[i] = string(p)
	}
	return out
}

func (p Permission) rank() int {
	for i, q := range permissionOrder {
		if p == q {
			return i
		}
	}
	return -1
}

// Includes reports whether a user holding p may do what needs need; an
// unknown role (GitHub's "none") includes nothing.
func (p Permission) Includes(need Permission) bool {
	return p.rank() >= 0 && need.rank() >= 0 && p.rank() >= need.rank()
}

// Command names as users type them after /ripcord.
const (
	CommandRetry    = "retry"
	CommandRollback = "rollback"
	CommandApprove  = "approve"
)

// Commands holds the minimum repository permission for each command.
type Commands struct {
	Retry    Permission
	Rollback Permission
	Approve  Permission
}

// CommandPermission returns the minimum permission for cmd, or false for a
// command ripcord does not know.
func (c *Config) CommandPermission(cmd string) (Permission, bool) {
	switch cmd {
	case CommandRetry:
		return c.Commands.Retry, true
	case CommandRollback:
		return c.Commands.Rollback, true
	case CommandApprove:
		return c.Commands.Approve, true
	}
	return "", false
}

func (d *decoder) commands(f field) Commands {
	var c Commands
	m, ok := d.fields(f.Value, f.Path, CommandRetry, CommandRollback, CommandApprove)
	if !ok {
		return c
	}
	read := func(key string) Permission {
		if v, ok := m[key]; ok {
			s, _ := d.enum(v, permissionNames()...)
			return Permission(s)
		}
		return ""
	}
	c.Retry, c.Rollback, c.Approve = read(CommandRetry), read(CommandRollback), read(CommandApprove)
	return c
}
