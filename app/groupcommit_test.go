package app

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

func writeTestDelivery(t *testing.T, w *groupWriter, id string) {
	t.Helper()
	inserted, _, err := w.Write(context.Background(), Delivery{ID: id, Event: "ping", Body: []byte(`{"zen":"x"}`), ReceivedAt: time.Now()})
	if err != nil || !inserted {
		t.Errorf("write %s: inserted %v, err %v", id, inserted, err)
	}
}

// A batch waits for a delivery announced as on its way (expect), and
// commits it with the one already there; with nothing on its way it does
// not wait; and it waits no longer than its delay for one that never comes.
func TestGroupCommitWaitsForDeliveriesOnTheirWay(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServer(t, dbURL, Options{})
		w := ts.writer

		t.Run("one on its way joins the batch", func(t *testing.T) {
			w.delay = time.Minute
			arrived := w.expect()
			first := make(chan time.Time)
			go func() {
				writeTestDelivery(t, w, "first")
				first <- time.Now()
			}()
			time.Sleep(100 * time.Millisecond) // the writer holds "first" and waits
			sent := time.Now()
			arrived()
			writeTestDelivery(t, w, "second")
			if done := <-first; done.Before(sent) {
				t.Errorf("the first delivery was committed %v before the one on its way was sent", sent.Sub(done))
			}
		})

		t.Run("nothing on its way: no wait", func(t *testing.T) {
			w.delay = time.Minute
			began := time.Now()
			writeTestDelivery(t, w, "alone")
			if took := time.Since(began); took > 30*time.Second {
				t.Errorf("a delivery with nothing on its way waited %v", took)
			}
		})

		t.Run("one that never comes: the delay bounds the wait", func(t *testing.T) {
			w.delay = 200 * time.Millisecond
			arrived := w.expect()
			defer arrived()
			began := time.Now()
			writeTestDelivery(t, w, "waits")
			if took := time.Since(began); took < w.delay {
				t.Errorf("committed after %v, before the delay of %v for the one announced", took, w.delay)
			}
		})
	})
}

// Every request to the hook that stops before the scheduler, refused or
// not, takes its delivery off the ones on their way: a count left behind
// would make every later batch wait its delay.
func TestRefusedDeliveriesAreNotLeftOnTheirWay(t *testing.T) {
	t.Parallel()
	ts := startServer(t, testdb.MigratedURL(t, "sqlite"), Options{})
	body := githubtest.LoadPayload(t, "ping", "payload.json")
	cases := []struct {
		id, sig string
		body    []byte
	}{
		{"bad-sig", githubtest.Sign("wrong", body), body},
		{"bad-json", githubtest.Sign(testSecret, body[:10]), body[:10]},
		{"", githubtest.Sign(testSecret, body), body},
		{"good", githubtest.Sign(testSecret, body), body},
		{"good", githubtest.Sign(testSecret, body), body}, // a redelivery
	}
	for i, c := range cases {
		code, _ := ts.deliver(t, "ping", c.id, c.body, c.sig)
		if n := ts.writer.coming.Load(); n != 0 {
			t.Errorf("request %d (%s, status %d) left %d deliveries on their way", i, c.id, code, n)
		}
	}
	code, _ := ts.deliver(t, "not_an_event_github_sends", "unknown", body, githubtest.Sign(testSecret, body))
	if n := ts.writer.coming.Load(); n != 0 {
		t.Errorf("an unknown event (status %d) left %d deliveries on their way", code, n)
	}
}

// Close answers every delivery handed over before it, stored, and refuses
// the ones that come after it: none is left waiting for an answer, and
// none is answered without being stored.
func TestGroupWriterCloseAnswersEveryDeliveryHandedOver(t *testing.T) {
	t.Parallel()
	srv := factCommitServer(t, "sqlite")
	w := srv.writer
	const n = 300
	inserted, errs := make([]bool, n), make([]error, n)
	var wg sync.WaitGroup
	var once sync.Once
	first := make(chan struct{}) // closed once a write has been answered
	for i := range n {
		if i == n/2 {
			<-first // so that some are stored before Close, whatever the machine's load
			wg.Go(w.Close)
		}
		wg.Go(func() {
			inserted[i], _, errs[i] = w.Write(context.Background(), Delivery{ID: fmt.Sprintf("close-%03d", i), Event: "ping",
				Body: []byte(`{"zen":"x"}`), ReceivedAt: time.Now()})
			once.Do(func() { close(first) })
		})
	}
	wg.Wait()
	if _, _, err := w.Write(context.Background(), Delivery{ID: "after-close", Event: "ping", Body: []byte(`{}`), ReceivedAt: time.Now()}); !errors.Is(err, errStopping) {
		t.Errorf("a write after Close: %v, want %v", err, errStopping)
	}

	stored := map[string]bool{}
	for _, id := range column[string](t, &testServer{Server: srv}, `SELECT id FROM deliveries WHERE id LIKE 'close-%' OR id = 'after-close'`) {
		stored[id] = true
	}
	answered := 0
	for i := range n {
		id := fmt.Sprintf("close-%03d", i)
		switch {
		case errs[i] == nil && inserted[i]:
			answered++
			if !stored[id] {
				t.Errorf("%s was answered stored but is not in the table", id)
			}
		case errors.Is(errs[i], errStopping):
			if stored[id] {
				t.Errorf("%s was refused (%v) but is stored", id, errs[i])
			}
		default:
			t.Errorf("%s: inserted %v, err %v", id, inserted[i], errs[i])
		}
	}
	if answered == 0 || stored["after-close"] {
		t.Errorf("%d deliveries stored before Close (want some); the one after Close stored: %v", answered, stored["after-close"])
	}
}
