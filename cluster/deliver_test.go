package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/records"
)

// factServer stands in for ripcord's facts API. While down it answers 503;
// it refuses facts whose release_id is "bad" with 400, as the real one
// refuses a fact that fails validation.
type factServer struct {
	*httptest.Server
	mu       sync.Mutex
	down     bool
	received []records.Fact
	requests int
}

func newFactServer(t *testing.T) *factServer {
	fs := &factServer{}
	fs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		fs.requests++
		if r.URL.Path != "/api/v1/facts/prod-eu" || r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "wrong path or token", http.StatusUnauthorized)
			return
		}
		if fs.down {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var b struct{ Facts []records.Fact }
		if err := json.Unmarshal(body, &b); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, f := range b.Facts {
			if f.ReleaseID == "bad" {
				http.Error(w, `{"error":"bad fact","field":"facts[0].release_id"}`, http.StatusBadRequest)
				return
			}
		}
		fs.received = append(fs.received, b.Facts...)
		_, _ = w.Write([]byte(`{"results":[]}`))
	}))
	t.Cleanup(fs.Close)
	return fs
}

func (fs *factServer) setDown(down bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.down = down
}

func (fs *factServer) got() []int64 {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	out := make([]int64, len(fs.received))
	for i, f := range fs.received {
		out[i] = f.Generation
	}
	return out
}

func newTestDeliverer(t *testing.T, url string, max int) *deliverer {
	s, err := OpenSpool(t.TempDir(), max)
	if err != nil {
		t.Fatal(err)
	}
	tok := func() (string, error) { return "tok", nil }
	return newDeliverer(s, &http.Client{Timeout: 5 * time.Second}, url, "prod-eu", tok, newMetrics(), slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func TestFactsSpooledWhileTheServerIsDownArriveInOrderWhenItIsBack(t *testing.T) {
	t.Parallel()
	srv := newFactServer(t)
	d := newTestDeliverer(t, srv.URL, 100)
	srv.setDown(true)
	for i := 1; i <= 5; i++ {
		if err := d.enqueue(fact(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.flush(context.Background()); err == nil {
		t.Fatal("flush to a server answering 503 reported success")
	}
	if d.spool.Len() != 5 || len(srv.got()) != 0 {
		t.Fatalf("with the server down: spooled %d, delivered %v; want all 5 kept", d.spool.Len(), srv.got())
	}
	if got := testutil.ToFloat64(d.metrics.factsSpooled); got != 5 {
		t.Errorf("ripcord_agent_facts_spooled = %v, want 5", got)
	}

	srv.setDown(false)
	if err := d.enqueue(fact(6)); err != nil {
		t.Fatal(err)
	}
	if err := d.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := srv.got(); len(got) != 6 || got[0] != 1 || got[5] != 6 {
		t.Errorf("delivered %v, want 1..6 in order", got)
	}
	if d.spool.Len() != 0 || testutil.ToFloat64(d.metrics.factsSent) != 6 {
		t.Errorf("spool %d, sent %v after delivery", d.spool.Len(), testutil.ToFloat64(d.metrics.factsSent))
	}
}

func TestARefusedFactIsDroppedAloneAndTheRestKeepTheirOrder(t *testing.T) {
	t.Parallel()
	srv := newFactServer(t)
	d := newTestDeliverer(t, srv.URL, 100)
	for i := 1; i <= 4; i++ {
		f := fact(i)
		if i == 2 {
			f.ReleaseID = "bad"
		}
		_ = d.enqueue(f)
	}
	if err := d.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := srv.got(); len(got) != 3 || got[0] != 1 || got[1] != 3 || got[2] != 4 {
		t.Errorf("delivered %v, want [1 3 4]", got)
	}
	if n := testutil.ToFloat64(d.metrics.factsFailed.WithLabelValues("rejected")); n != 1 || d.spool.Len() != 0 {
		t.Errorf("rejected %v, spooled %d; want 1 rejected and nothing left", n, d.spool.Len())
	}
}

// A 403 that names a field is the server refusing one fact (here one
// naming another cluster's release, as app/facts.go answers it), not the
// token: it would answer the same for ever, so the fact is dropped like a
// 400's and the facts behind it are delivered. A 403 that names no field
// refuses the token, which may be rotated: every fact stays spooled.
func TestA403NamingAFieldDropsTheFactAndA403OfTheTokenKeepsThem(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var received []int64
	tokenRefused := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if tokenRefused {
			pipeline.WriteError(w, http.StatusForbidden, "", `this token belongs to cluster "prod-us", not "prod-eu"`)
			return
		}
		var b struct{ Facts []records.Fact }
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			pipeline.WriteError(w, http.StatusBadRequest, "", err.Error())
			return
		}
		for i, f := range b.Facts {
			if f.ReleaseID == "checkout-v42:prod-us/prod" {
				pipeline.WriteError(w, http.StatusForbidden, fmt.Sprintf("facts[%d].release_id", i),
					"release checkout-v42:prod-us/prod is not of cluster prod-eu (it is of prod-us)")
				return
			}
		}
		for _, f := range b.Facts {
			received = append(received, f.Generation)
		}
		pipeline.WriteJSON(w, http.StatusOK, map[string]any{"results": []any{}})
	}))
	t.Cleanup(srv.Close)
	d := newTestDeliverer(t, srv.URL, 100)
	logs := make(recordHandler, 16)
	d.log = slog.New(logs)
	for i := 1; i <= 4; i++ {
		f := fact(i)
		if i == 2 {
			f.ReleaseID = "checkout-v42:prod-us/prod"
		}
		_ = d.enqueue(f)
	}
	if err := d.flush(context.Background()); err != nil {
		t.Fatalf("flush with one fact refused by a 403 naming its field: %v", err)
	}
	mu.Lock()
	got := append([]int64(nil), received...)
	mu.Unlock()
	if !slices.Equal(got, []int64{1, 3, 4}) {
		t.Errorf("delivered %v, want [1 3 4]", got)
	}
	if n := testutil.ToFloat64(d.metrics.factsFailed.WithLabelValues("rejected")); n != 1 || d.spool.Len() != 0 {
		t.Errorf("rejected %v, spooled %d; want 1 rejected and nothing left", n, d.spool.Len())
	}
	select {
	case r := <-logs:
		if r.Message != "the server refused a fact; dropping it" {
			t.Errorf("logged %q, want the line a 400's refused fact logs", r.Message)
		}
	default:
		t.Error("the dropped fact was not logged")
	}

	mu.Lock()
	tokenRefused = true
	mu.Unlock()
	_ = d.enqueue(fact(5))
	_ = d.enqueue(fact(6))
	if err := d.flush(context.Background()); err == nil || d.spool.Len() != 2 {
		t.Errorf("flush with the token refused by a 403: err %v, spooled %d; want an error and both facts kept", err, d.spool.Len())
	}
}

func TestAWrongTokenKeepsTheFactsSpooled(t *testing.T) {
	t.Parallel()
	srv := newFactServer(t)
	d := newTestDeliverer(t, srv.URL, 100)
	d.token = func() (string, error) { return "rotated-on-the-server-first", nil }
	_ = d.enqueue(fact(1))
	if err := d.flush(context.Background()); err == nil || d.spool.Len() != 1 {
		t.Errorf("flush with a token the server refuses: err %v, spooled %d; a 401 must not lose the fact", err, d.spool.Len())
	}
}

func TestSpoolOverflowIsCounted(t *testing.T) {
	t.Parallel()
	srv := newFactServer(t)
	d := newTestDeliverer(t, srv.URL, 2)
	srv.setDown(true)
	for i := 1; i <= 5; i++ {
		_ = d.enqueue(fact(i))
	}
	if n := testutil.ToFloat64(d.metrics.factsFailed.WithLabelValues("overflow")); n != 3 {
		t.Errorf("overflow = %v, want 3", n)
	}
	srv.setDown(false)
	_ = d.flush(context.Background())
	if got := srv.got(); len(got) != 2 || got[0] != 4 || got[1] != 5 {
		t.Errorf("delivered %v after the overflow, want the newest [4 5]", got)
	}
}

func TestRunDeliversWhatIsEnqueued(t *testing.T) {
	t.Parallel()
	srv := newFactServer(t)
	d := newTestDeliverer(t, srv.URL, 100)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.run(ctx); close(done) }()
	_ = d.enqueue(fact(1))
	_ = d.enqueue(fact(2))
	deadline := time.Now().Add(10 * time.Second)
	for len(srv.got()) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if got := srv.got(); len(got) != 2 {
		t.Errorf("run delivered %v, want [1 2]", got)
	}
}

// recordHandler hands each log record to a channel, for tests that wait
// for a line the agent logs from its own goroutine.
type recordHandler chan slog.Record

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	h <- r
	return nil
}
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordHandler) WithGroup(string) slog.Handler      { return h }

// A 401 is most often a token from the wrong place (an old variable left
// beside the file, a file from another cluster's Secret): the agent's log
// says where its token came from, as the CLI's 401 does; a server that is
// down is not the token's fault and says nothing of it.
func TestARefusedTokenIsLoggedWithWhereItCameFrom(t *testing.T) {
	t.Parallel()
	const from = "file /var/run/ripcord/token given by flag --token-file"
	for _, down := range []bool{false, true} {
		srv := newFactServer(t)
		srv.setDown(down)
		d := newTestDeliverer(t, srv.URL, 100)
		if !down {
			d.token = func() (string, error) { return "rotated-on-the-server-first", nil }
		}
		d.tokenFrom = from
		msg, attrs := firstDeliveryLog(t, d)
		want := from
		if down {
			want = ""
		}
		if attrs["token_from"] != want {
			t.Errorf("down %v: %q logged with token_from=%q (attributes %v), want %q", down, msg, attrs["token_from"], attrs, want)
		}
	}
}

// A 403 to a fact delivery that names no field is the server refusing the
// token as another cluster's (a Secret copied from the wrong cluster): the
// agent logs where its token came from, as on a 401, with a hint that says
// what the 403 means. A 403 that names a field refuses a fact, not the
// token, and says nothing of it; nor does a 403 that is not the server's.
func TestAnotherClustersTokenOnTheFactsPathSaysWhereTheTokenCameFrom(t *testing.T) {
	t.Parallel()
	const from = "file /var/run/ripcord/token given by flag --token-file"
	cases := []struct {
		name     string
		answer   func(w http.ResponseWriter)
		wantFrom string
	}{
		{"another cluster's token", func(w http.ResponseWriter) {
			pipeline.WriteError(w, http.StatusForbidden, "", `this token belongs to cluster "prod-us", not "prod-eu"`)
		}, from},
		{"a fact naming another cluster's release", func(w http.ResponseWriter) {
			pipeline.WriteError(w, http.StatusForbidden, "facts[0].release_id", "release checkout-v42:prod-us/prod is not of cluster prod-eu")
		}, ""},
		{"a proxy's page", func(w http.ResponseWriter) {
			http.Error(w, "<html>Forbidden</html>", http.StatusForbidden)
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { c.answer(w) }))
			t.Cleanup(srv.Close)
			d := newTestDeliverer(t, srv.URL, 100)
			d.tokenFrom = from
			msg, attrs := firstDeliveryLog(t, d)
			if attrs["token_from"] != c.wantFrom {
				t.Errorf("%q logged with token_from=%q (attributes %v), want %q", msg, attrs["token_from"], attrs, c.wantFrom)
			}
			if hinted := strings.Contains(attrs["hint"], "another cluster's"); hinted != (c.wantFrom != "") {
				t.Errorf("%q logged with hint=%q; want a hint that the token is another cluster's only beside token_from", msg, attrs["hint"])
			}
		})
	}
}

// firstDeliveryLog runs d with one fact spooled until it logs its first
// line (a failed delivery), and returns that line's message and attributes.
func firstDeliveryLog(t *testing.T, d *deliverer) (string, map[string]string) {
	t.Helper()
	records := make(recordHandler, 16)
	d.log = slog.New(records)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if err := d.enqueue(fact(1)); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-records:
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
		return r.Message, attrs
	case <-time.After(10 * time.Second):
		t.Fatal("no log line within 10 s of a failed delivery")
		return "", nil
	}
}
