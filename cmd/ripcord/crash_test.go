package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testbin"
	"github.com/ripcord/ripcord/internal/testdb"
)

type child struct {
	cmd  *exec.Cmd
	addr string
	logs *lockedBuffer
}

// servingAddr is the address in serve's "ripcord is serving" line.
var servingAddr = regexp.MustCompile(`msg="ripcord is serving" listen=(\S+)`)

// startChild starts `ripcord serve` on dbURL and waits until it is ready;
// extra are more RIPCORD_* settings for it. It listens on a port the
// kernel chooses (listen 127.0.0.1:0) and says which in its start-up
// log: a free port picked here and handed to it could be taken by a
// server another test starts before the child binds it.
func startChild(t *testing.T, bin, dbURL string, extra ...string) *child {
	t.Helper()
	c := &child{logs: &lockedBuffer{}}
	c.cmd = exec.Command(bin, "serve")
	c.cmd.Env = append(os.Environ(),
		"RIPCORD_LISTEN=127.0.0.1:0", "RIPCORD_DATABASE="+dbURL, "RIPCORD_API_TOKEN=t",
		"RIPCORD_GITHUB_WEBHOOK_SECRET=crash-secret", "RIPCORD_LOG_LEVEL=info")
	c.cmd.Env = append(c.cmd.Env, extra...)
	c.cmd.Stdout, c.cmd.Stderr = c.logs, c.logs
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c.addr == "" {
			if m := servingAddr.FindStringSubmatch(c.logs.String()); m != nil {
				c.addr = m[1]
			}
		}
		if c.addr != "" {
			resp, err := http.Get("http://" + c.addr + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					return c
				}
			}
		}
		if time.Now().After(deadline) {
			c.cmd.Process.Kill()
			t.Fatalf("serve did not become ready: %s", c.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCrashLosesNoAcknowledgedDeliveryAndProcessesNoneTwice runs `ripcord
// serve` as a child process, sends signed deliveries from 32 connections,
// kills the server with SIGKILL while they arrive, restarts it and sends the
// rest: every delivery that was answered 202 must end processed exactly once.
// On both databases: on PostgreSQL the kill also drops the connection of a
// drain round that holds its deliveries' row locks.
func TestCrashLosesNoAcknowledgedDeliveryAndProcessesNoneTwice(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the server as a child process")
	}
	bin, err := testbin.Ripcord()
	if err != nil {
		t.Fatal(err)
	}
	testdb.Each(t, func(t *testing.T, dbURL string) { crashAndRestart(t, bin, dbURL) })
}

func crashAndRestart(t *testing.T, bin, dbURL string) {
	body := githubtest.LoadPayload(t, "installation_repositories", "added.payload.json")
	sig := githubtest.Sign("crash-secret", body)
	const total, killAfter = 1500, 500

	var acked sync.Map
	var nAcked atomic.Int64
	send := func(addr string, ids <-chan int, killed *atomic.Bool) (unsent []int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		client := &http.Client{Timeout: 10 * time.Second}
		for range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range ids {
					if killed != nil && killed.Load() {
						mu.Lock()
						unsent = append(unsent, i)
						mu.Unlock()
						continue
					}
					id := fmt.Sprintf("crash-%05d", i)
					req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/api/github/hook", bytes.NewReader(body))
					req.Header.Set("X-GitHub-Event", "installation_repositories")
					req.Header.Set("X-GitHub-Delivery", id)
					req.Header.Set("X-Hub-Signature-256", sig)
					req.Header.Set("Content-Type", "application/json")
					resp, err := client.Do(req)
					if err != nil {
						continue // the server died under this request: not acknowledged
					}
					resp.Body.Close()
					if resp.StatusCode == http.StatusAccepted {
						acked.Store(id, true)
						nAcked.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		return unsent
	}

	first := startChild(t, bin, dbURL)
	ids := make(chan int)
	var killed atomic.Bool
	go func() {
		for i := range total {
			if i == killAfter+200 { // give the kill a moment to land mid-stream
				for nAcked.Load() < killAfter {
					time.Sleep(time.Millisecond)
				}
				first.cmd.Process.Signal(syscall.SIGKILL)
				killed.Store(true)
			}
			ids <- i
		}
		close(ids)
	}()
	unsent := send(first.addr, ids, &killed)
	first.cmd.Wait()
	beforeRestart := nAcked.Load()
	t.Logf("killed with SIGKILL after %d acknowledgements; %d deliveries left to send", beforeRestart, len(unsent))

	second := startChild(t, bin, dbURL)
	rest := make(chan int)
	go func() {
		for _, i := range unsent {
			rest <- i
		}
		close(rest)
	}()
	send(second.addr, rest, nil)
	waitProcessed(t, dbURL, second)
	second.cmd.Process.Signal(syscall.SIGTERM)
	if err := second.cmd.Wait(); err != nil {
		t.Errorf("serve did not stop cleanly on SIGTERM: %v\n%s", err, second.logs.String())
	}

	db, err := store.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checked := 0
	acked.Range(func(k, _ any) bool {
		var state string
		var count int
		err := db.Read.QueryRow(`SELECT state, processed_count FROM deliveries WHERE id = $1`, k).Scan(&state, &count)
		if err == sql.ErrNoRows {
			t.Errorf("%s was acknowledged but is not stored", k)
		} else if err != nil {
			t.Fatal(err)
		} else if state != "processed" || count != 1 {
			t.Errorf("%s ended %s after %d completions, want processed once", k, state, count)
		}
		checked++
		return true
	})
	var twice int
	if err := db.Read.QueryRow(`SELECT COUNT(*) FROM deliveries WHERE processed_count > 1`).Scan(&twice); err != nil {
		t.Fatal(err)
	}
	if twice != 0 {
		t.Errorf("%d deliveries were processed more than once", twice)
	}
	if checked < total-100 || beforeRestart < killAfter {
		t.Errorf("only %d deliveries acknowledged (%d before the kill): the test did not exercise the crash", checked, beforeRestart)
	}
	t.Logf("%d acknowledged deliveries, each processed exactly once", checked)
}

func waitProcessed(t *testing.T, dbURL string, c *child) {
	t.Helper()
	db, err := store.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var queued int
		if err := db.Read.QueryRow(`SELECT COUNT(*) FROM deliveries WHERE state = 'queued'`).Scan(&queued); err != nil {
			t.Fatal(err)
		}
		if queued == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries still queued after restart\n%s", queued, c.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
