package configload

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/repoconfig"
)

// pushHandler queues the ripcord/config check of every push that adds or
// changes .github/ripcord.yml.
type pushHandler struct{ deps pipeline.Deps }

func (pushHandler) Handles() []string { return []string{"push"} }

func (h pushHandler) Handle(_ context.Context, d pipeline.Delivery) (pipeline.Commit, error) {
	var ev github.PushEvent
	if err := json.Unmarshal(d.Body, &ev); err != nil {
		return nil, fmt.Errorf("decode push event: %w", err)
	}
	if !ChangesConfig(ev) {
		return nil, nil
	}
	args := CheckArgs{Repository: ev.GetRepo().GetFullName(), HeadSHA: ev.GetAfter(), InstallationID: d.InstallationID}
	if args.Repository == "" || args.InstallationID == 0 {
		return nil, nil // not an App delivery: nothing to act as
	}
	return func(ctx context.Context, tx *sql.Tx) error {
		return QueueCheck(ctx, tx, h.deps.River(), args)
	}, nil
}

// ChangesConfig reports whether a push leaves a changed config at its head:
// some commit added or modified the file, and the branch still exists. A
// removal is not checked: no config means ripcord leaves the repository be.
func ChangesConfig(ev github.PushEvent) bool {
	if ev.GetDeleted() || strings.Trim(ev.GetAfter(), "0") == "" {
		return false
	}
	for _, c := range ev.Commits {
		if slices.Contains(c.Added, repoconfig.Path) || slices.Contains(c.Modified, repoconfig.Path) {
			return true
		}
	}
	return false
}

func splitRepo(full string) (string, string) {
	owner, name, _ := strings.Cut(full, "/")
	return owner, name
}
