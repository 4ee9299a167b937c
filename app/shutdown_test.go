package app

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// stuckHandler takes installation deliveries; while stuck is open, it says
// it was entered and waits for its context, as a handler waiting on a
// GitHub that does not answer.
type stuckHandler struct {
	stuck   bool
	entered chan struct{}
	once    sync.Once
}

func (*stuckHandler) Handles() []string { return []string{"installation"} }

func (h *stuckHandler) Handle(ctx context.Context, _ Delivery) (Commit, error) {
	if h.stuck {
		h.once.Do(func() { close(h.entered) })
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return func(context.Context, *sql.Tx) error { return nil }, nil
}

// SIGTERM (Run's context ending) while deliveries are being written in
// group commits, a drain round is in flight whose handler does not answer,
// and an agent's long poll waits: the server must stop within its shutdown
// timeout, not after the long poll's 25 s or the round's 2 min; nothing it
// acknowledged may be lost, and the next start processes every delivery
// acknowledged, exactly once.
func TestStopWithWorkInFlightEndsInTimeAndLosesNothing(t *testing.T) {
	// Not parallel: it bounds the stop's wall time, which the CPU of
	// the package's other tests would stretch.
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		const stopWithin = 3 * time.Second
		body := githubtest.LoadPayload(t, "installation", "created.payload.json")
		sig := githubtest.Sign(testSecret, body)
		cfg := testConfig(dbURL)
		cfg.Clusters = tokensOf(map[string]string{"prod-eu": "tok-eu"})

		stuck := &stuckHandler{stuck: true, entered: make(chan struct{})}
		srv, err := New(context.Background(), cfg, Options{Logger: discardLogger(), Handlers: []EventHandler{stuck},
			ShutdownTimeout: stopWithin})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + ln.Addr().String()
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		ran := make(chan error, 1)
		go func() { ran <- srv.Run(ctx, ln) }()
		waitFor(t, "the server to answer", 10*time.Second, func() bool {
			resp, err := http.Get(url + "/healthz")
			if err == nil {
				resp.Body.Close()
			}
			return err == nil
		})

		var mu sync.Mutex
		var acked []string
		deliver := func(id string) bool {
			req, _ := http.NewRequest(http.MethodPost, url+"/api/github/hook", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-GitHub-Event", "installation")
			req.Header.Set("X-GitHub-Delivery", id)
			req.Header.Set("X-Hub-Signature-256", sig)
			resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
			if err != nil {
				return false
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusAccepted {
				mu.Lock()
				acked = append(acked, id)
				mu.Unlock()
			}
			return true
		}
		if !deliver("first") {
			t.Fatal("the first delivery was not answered")
		}
		select {
		case <-stuck.entered: // a drain round is in flight, and will not finish by itself
		case <-time.After(10 * time.Second):
			t.Fatalf("the drain never took the first delivery (acknowledged: %v)", acked)
		}

		// An agent's long poll, waiting for actions.
		polled := make(chan int, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodGet, url+"/api/v1/clusters/prod-eu/actions?agent=a1&wait=25s", nil)
			req.Header.Set("Authorization", "Bearer tok-eu")
			resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
			if err != nil {
				polled <- 0
				return
			}
			resp.Body.Close()
			polled <- resp.StatusCode
		}()

		// Deliveries in group commits, from 8 connections, until the server
		// stops answering.
		var senders sync.WaitGroup
		for c := range 8 {
			senders.Add(1)
			go func() {
				defer senders.Done()
				for i := 0; ; i++ {
					if !deliver(fmt.Sprintf("c%d-%d", c, i)) {
						return
					}
				}
			}()
		}
		time.Sleep(300 * time.Millisecond) // the long poll waits, the commits flow

		began := time.Now()
		stop() // SIGTERM
		select {
		case err := <-ran:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(stopWithin + 5*time.Second):
			t.Fatalf("the server did not stop within %v of its shutdown timeout (%v)", 5*time.Second, stopWithin)
		}
		took := time.Since(began)
		if took > stopWithin+time.Second {
			t.Errorf("the server took %v to stop; its shutdown timeout is %v", took, stopWithin)
		}
		senders.Wait()
		select {
		case code := <-polled:
			if code != http.StatusOK {
				t.Errorf("the long poll in flight was answered %d, want 200 (no actions: poll again)", code)
			}
		case <-time.After(5 * time.Second):
			t.Error("the long poll was not answered")
		}
		t.Logf("stopped in %v with %d deliveries acknowledged", took.Round(time.Millisecond), len(acked))

		// The next start finishes the work.
		stuck.stuck = false
		ts := startServer(t, dbURL, Options{Handlers: []EventHandler{stuck}})
		var missing []string
		waitFor(t, "every acknowledged delivery to be processed after the restart", 30*time.Second, func() bool {
			missing = missing[:0]
			for _, id := range acked {
				var state string
				if err := ts.db.Read.QueryRow(`SELECT state FROM deliveries WHERE id = $1`, id).Scan(&state); err != nil || state != DeliveryProcessed {
					missing = append(missing, id+" "+state)
				}
			}
			return len(missing) == 0
		})
		ts.checkCompletedOnce(t)
	})
}
