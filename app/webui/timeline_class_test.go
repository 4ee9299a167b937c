package webui

import (
	"testing"

	"github.com/ripcord/ripcord/records"
)

// A rollback given back by its agent, or waiting for GitHub's rate limit,
// is still under way: the timeline must not show it as finished ("done")
// while it waits for the next agent or the reset.
func TestTimelineShowsARequeuedRollbackAsRunning(t *testing.T) {
	t.Parallel()
	for typ, want := range map[records.AuditType]string{
		records.AuditRollbackRequeued:    "running",
		records.AuditRollbackRateLimited: "running",
		records.AuditRollbackInitiated:   "running",
		records.AuditRollbackFailed:      "bad",
		records.AuditRollbackCompleted:   "ok",
		records.AuditStateChanged:        "done",
	} {
		if got := eventClass(typ); got != want {
			t.Errorf("eventClass(%s) = %q, want %q", typ, got, want)
		}
	}
}
