package main

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/internal/testserve"
)

// PERFORMANCE.md's intake section says what `ripcord serve` does with the
// load's deliveries, and it says what a real server answers one of them:
// it once said they were worked by the job queue, after they had come to be
// stored ignored, which changes what (c) and (d) measure.
func TestPerformanceDescribesWhatTheServerDoesWithTheLoad(t *testing.T) {
	url := testserve.Start(t, func(cfg *config.Config, _ string) {
		cfg.GitHub.WebhookSecrets = []string{benchSecret}
	})

	b := body(12 << 10)
	req, err := http.NewRequest(http.MethodPost, url+"/api/github/hook", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "check_suite")
	req.Header.Set("X-GitHub-Delivery", deliveryID())
	req.Header.Set("X-Hub-Signature-256", sign(b))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct{ Status string }
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("the load's delivery: %d, %v", resp.StatusCode, err)
	}

	perf, err := os.ReadFile("../../PERFORMANCE.md")
	if err != nil {
		t.Fatal(err)
	}
	_, intro, ok := strings.Cut(string(perf), "\n## Webhook intake")
	if !ok {
		t.Fatal("PERFORMANCE.md has no webhook intake section")
	}
	intro, _, _ = strings.Cut(intro, "\n|") // up to its first table
	if !strings.Contains(intro, "`"+answer.Status+"`") {
		t.Errorf("a real server answers the load's delivery %q, which PERFORMANCE.md's intake section does not say (it tells what (c) and (d) measure):\n%s", answer.Status, intro)
	}
}
