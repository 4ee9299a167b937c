package rollbackflow

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/rollbackpr"
)

// pushHandler keeps the rollback base cache in step with the GitOps
// repositories: every push tells it the branch's new head and tree and which
// paths changed. It writes nothing, so it returns no Commit; applying a push
// twice (a redelivery) changes nothing the second time.
type pushHandler struct{ cache rollbackpr.BaseCache }

func (pushHandler) Handles() []string { return []string{"push"} }

func (h pushHandler) Handle(_ context.Context, d pipeline.Delivery) (pipeline.Commit, error) {
	var ev github.PushEvent
	if err := json.Unmarshal(d.Body, &ev); err != nil {
		return nil, pipeline.Permanent(fmt.Errorf("decode push event: %w", err))
	}
	if p, ok := PushOf(ev); ok {
		h.cache.Pushed(p)
	}
	return nil, nil
}

// PushOf is what a push event says to the base cache; false for a push of a
// tag or of no repository.
func PushOf(ev github.PushEvent) (rollbackpr.Push, bool) {
	branch, ok := strings.CutPrefix(ev.GetRef(), "refs/heads/")
	repo := ev.GetRepo().GetFullName()
	if !ok || branch == "" || repo == "" {
		return rollbackpr.Push{}, false
	}
	p := rollbackpr.Push{
		Repo: repo, Branch: branch, Before: ev.GetBefore(), After: ev.GetAfter(),
		Tree: ev.GetHeadCommit().GetTreeID(), Forced: ev.GetForced(), Deleted: ev.GetDeleted(),
		Commits: len(ev.Commits),
	}
	for _, c := range ev.Commits {
		p.Changed = append(p.Changed, c.Added...)
		p.Changed = append(p.Changed, c.Modified...)
		p.Changed = append(p.Changed, c.Removed...)
	}
	return p, true
}
