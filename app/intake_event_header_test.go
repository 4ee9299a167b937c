package app

import (
	"encoding/json"
	"testing"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// A delivery posted by hand without X-GitHub-Event was refused "missing
// event type", naming no header; a missing X-GitHub-Delivery was named.
func TestIntakeNamesAMissingEventHeader(t *testing.T) {
	t.Parallel()
	body := githubtest.LoadPayload(t, "workflow_run", "completed.payload.json")
	ts := startServer(t, testdb.MigratedURL(t, "sqlite"), Options{})
	code, resp := ts.postHook(t, map[string]string{
		"X-GitHub-Delivery":   "e1",
		"X-Hub-Signature-256": githubtest.Sign(testSecret, body),
		"Content-Type":        "application/json",
	}, body)
	var refusal struct{ Error string }
	if err := json.Unmarshal([]byte(resp), &refusal); code != 400 || err != nil {
		t.Fatalf("status %d (%s), want 400 with an error", code, resp)
	}
	const want = "missing X-GitHub-Event header: GitHub names the event there (curl: -H 'X-GitHub-Event: ping')"
	if refusal.Error != want {
		t.Errorf("refusal %q, want %q", refusal.Error, want)
	}
	if n := ts.countDeliveries(t); n != 0 {
		t.Errorf("%d deliveries stored after a refused request, want 0", n)
	}
}
