package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testbin"
	"github.com/ripcord/ripcord/internal/testdb"
)

// TestSQLiteThatCannotBeWrittenAcknowledgesNothing runs `ripcord serve` on
// SQLite as a child process and takes the writing of files away from it
// while it runs (a file size limit of one byte: every write of the
// database, its write-ahead log included, fails as on a full disk), then
// gives it back. Meanwhile deliveries and facts must be refused with 5xx,
// never acknowledged; afterwards, without a restart, they are acknowledged
// again, and every one acknowledged, before or after, ends processed
// exactly once. The log says what happened once, not per request.
func TestSQLiteThatCannotBeWrittenAcknowledgesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server as a child process")
	}
	bin, err := testbin.Ripcord()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "ripcord.yml")
	if err := os.WriteFile(cfgFile, []byte("clusters:\n  prod-eu: {token: eu-token}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RIPCORD_CONFIG", cfgFile)
	dbURL := "sqlite://" + filepath.Join(dir, "ripcord.db")
	c := startChild(t, bin, dbURL)
	defer c.cmd.Process.Kill()

	body := githubtest.LoadPayload(t, "installation_repositories", "added.payload.json")
	client := &http.Client{Timeout: 20 * time.Second}
	post := func(path, token string, header map[string]string, b []byte) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+c.addr+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		var out bytes.Buffer
		_, _ = out.ReadFrom(resp.Body)
		return resp.StatusCode, out.String()
	}
	deliver := func(id string) (int, string) {
		return post("/api/github/hook", "", map[string]string{"X-GitHub-Event": "installation_repositories",
			"X-GitHub-Delivery": id, "X-Hub-Signature-256": githubtest.Sign("crash-secret", body)}, body)
	}
	fact := func(i int) (int, string) {
		return post("/api/v1/facts/prod-eu", "eu-token", nil, fmt.Appendf(nil, `{"source": "rollout", "namespace": "shop",
			"name": "checkout", "uid": "u-%d", "generation": 1, "observed_generation": 1, "phase": "Progressing",
			"images": ["registry.example/shop/checkout:v1"], "release_id": "r-%d", "observed_at": %q}`,
			i, i, time.Now().UTC().Format(time.RFC3339)))
	}

	var acked []string
	for i := range 5 {
		id := fmt.Sprintf("before-%d", i)
		if code, resp := deliver(id); code != http.StatusAccepted {
			t.Fatalf("%s: %d %s", id, code, resp)
		}
		acked = append(acked, id)
	}
	if code, resp := fact(0); code != http.StatusOK {
		t.Fatalf("a fact before: %d %s", code, resp)
	}

	testdb.SetFileSizeLimit(t, c.cmd.Process.Pid, 1)
	refused := 0
	for i := 0; i < 15; i++ {
		id := fmt.Sprintf("during-%d", i)
		code, resp := deliver(id)
		if code == http.StatusAccepted {
			t.Errorf("%s was acknowledged while the database could not be written: %s", id, resp)
			acked = append(acked, id) // it must then be stored and processed all the same
		} else if code < 500 {
			t.Errorf("%s while the database could not be written: %d %s, want 5xx", id, code, resp)
		} else {
			refused++
		}
		if code, resp := fact(100 + i); code < 500 {
			t.Errorf("a fact while the database could not be written: %d %s, want 5xx", code, resp)
		}
		time.Sleep(100 * time.Millisecond)
	}
	testdb.SetFileSizeLimit(t, c.cmd.Process.Pid, ^uint64(0))

	deadline := time.Now().Add(20 * time.Second)
	for i := 0; ; i++ {
		code, _ := deliver(fmt.Sprintf("after-%d", i))
		if code == http.StatusAccepted {
			acked = append(acked, fmt.Sprintf("after-%d", i))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries still refused (%d) 20 s after the database could be written again", code)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, resp := fact(1); code != http.StatusOK {
		t.Errorf("a fact after: %d %s", code, resp)
	}

	db, err := store.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	state := func(id string) (string, int) {
		var s string
		var n int
		if err := db.Read.QueryRow(`SELECT state, processed_count FROM deliveries WHERE id = $1`, id).Scan(&s, &n); err == sql.ErrNoRows {
			return "not stored", 0
		} else if err != nil {
			t.Fatal(err)
		}
		return s, n
	}
	deadline = time.Now().Add(30 * time.Second)
	for _, id := range acked {
		for {
			if s, _ := state(id); s == "processed" || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	if err := c.cmd.Wait(); err != nil {
		t.Errorf("serve did not stop cleanly on SIGTERM: %v", err)
	}
	for _, id := range acked {
		if s, n := state(id); s != "processed" || n != 1 {
			t.Errorf("%s was acknowledged and ended %s after %d completions, want processed once", id, s, n)
		}
	}
	logs := c.logs.String()
	if t.Failed() {
		t.Logf("serve's log:\n%s", logs)
	}
	if refused == 0 {
		t.Error("no delivery was refused: the test did not take the writes away")
	}
	// The facts are drift (no release is open): an alert for each one
	// stored, none for those refused.
	for i := 100; i < 115; i++ {
		if strings.Contains(logs, fmt.Sprintf("release_id=r-%d ", i)) {
			t.Errorf("an alert was logged for the fact of r-%d, which was refused and never stored", i)
		}
	}
	if n := strings.Count(logs, "msg=alert"); n != 2 {
		t.Errorf("%d alerts logged, want 2 (the facts stored before and after):\n%s", n, logs)
	}
	if n := strings.Count(logs, "the database is unavailable"); n != 1 {
		t.Errorf("the outage was logged %d times, want once:\n%s", n, logs)
	}
	if n := strings.Count(logs, "level=ERROR") + strings.Count(logs, "level=WARN"); n > 8 {
		t.Errorf("%d warnings and errors for an outage of 2 s: the log floods:\n%s", n, logs)
	}
}
