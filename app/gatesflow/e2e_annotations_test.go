package gatesflow_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// GitHub takes 50 annotations a request and adds those of an update to the
// run's. A verdict with more is written in several requests; when one of
// the later ones fails, the retried job must write what is missing, not
// every batch again: the run holds each annotation exactly once.
func TestARetriedVerdictWritesEachAnnotationOnce(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		e := e2etest.Start(t, dbURL, app.Options{})
		e.CheckRequestsAtCleanup(t)
		e.GitHub.PutFile(repo, "main", ".github/ripcord.yml", gatesConfig("values: {schema: deploy/release.schema.json}", "prod"))
		e.GitHub.PutFile(repo, "main", "deploy/release.schema.json",
			`{"type":"object","properties":{"ports":{"type":"array","items":{"type":"integer","maximum":10}}}}`)
		// 120 ports over the maximum: 120 violations, each on its own line,
		// written as 50 + 50 + 20.
		const violations = 120
		var b strings.Builder
		b.WriteString(release(digestB, 3) + "ports:\n")
		for range violations {
			b.WriteString("  - 99\n")
		}
		base := e.GitHub.PutFile(repo, "main", "deploy/prod.yaml", release(digestA, 3))
		head := e.GitHub.PutFile(repo, "bump-checkout", "deploy/prod.yaml", b.String())
		number := e.GitHub.OpenPullRequest(repo, "octocat", "bump-checkout", "main", "bump checkout")

		// The first request with the last batch fails, once.
		const update = "PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}"
		pass := e.GitHub.Default(update)
		var mu sync.Mutex
		failed := false
		e.GitHub.Handle(update, func(w http.ResponseWriter, r *http.Request, p map[string]string) {
			var in struct {
				Output struct {
					Annotations []json.RawMessage `json:"annotations"`
				} `json:"output"`
			}
			raw, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(raw, &in)
			mu.Lock()
			fail := !failed && len(in.Output.Annotations) == violations%50
			failed = failed || fail
			mu.Unlock()
			if fail {
				http.Error(w, `{"message":"Server Error"}`, http.StatusBadGateway)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(raw))
			pass(w, r, p)
		})

		e.Install(repo)
		e.Deliver("pull_request", pullRequest(t, number, head, base, "bump-checkout"))
		e.WaitFor("the values gate", 20*time.Second, func() bool { return len(completedRuns(e, head)) == 1 })
		e.Settle()
		mu.Lock()
		if !failed {
			t.Fatal("no request carried the last batch of annotations")
		}
		mu.Unlock()
		cr := completedRuns(e, head)["ripcord/values"]
		seen := map[int]int{}
		for _, a := range cr.Annotations {
			seen[a.StartLine]++
		}
		var twice []string
		for line, n := range seen {
			if n != 1 {
				twice = append(twice, fmt.Sprintf("line %d ×%d", line, n))
			}
		}
		slices.Sort(twice)
		if len(cr.Annotations) != violations || len(seen) != violations || len(twice) > 0 {
			t.Errorf("ripcord/values holds %d annotations on %d lines (%v), want each of the %d violations once",
				len(cr.Annotations), len(seen), twice, violations)
		}
	})
}
