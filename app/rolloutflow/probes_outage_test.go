package rolloutflow

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// probeOutage answers the probe workflow's dispatches: 502 while down,
// else 200 with a run id, recording the reading dispatched.
type probeOutage struct {
	mu       sync.Mutex
	down     bool
	tries    int // dispatches answered 502
	readings []string
	inputs   []map[string]any
}

func (o *probeOutage) set(down bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.down = down
}

func (o *probeOutage) dispatched() []map[string]any {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]map[string]any(nil), o.inputs...)
}

// bakingWithProbeOutage deploys the runner harness's one stage and then
// answers its probe dispatches with o.
func bakingWithProbeOutage(t *testing.T) (*harness, *probeOutage) {
	return bakingWithProbeOutageOn(t, testdb.MigratedURL(t, "sqlite"))
}

// bakingWithProbeOutageOn is bakingWithProbeOutage on dbURL.
func bakingWithProbeOutageOn(t *testing.T, dbURL string) (*harness, *probeOutage) {
	h := bakingRunners(t, dbURL)
	o := &probeOutage{down: true}
	n := int64(5000)
	h.gh.Handle("POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches", func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		var in struct {
			Inputs map[string]any `json:"inputs"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		o.mu.Lock()
		defer o.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if o.down {
			o.tries++
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprint(w, `{"message":"Server Error"}`)
			return
		}
		n++
		o.inputs = append(o.inputs, in.Inputs)
		fmt.Fprintf(w, `{"workflow_run_id":%d}`, n)
	})
	return h, o
}

// A probe workflow GitHub answers 5xx for was never run: that is no red
// reading. It is dispatched again on a later tick, and the reading is
// taken from its results.
func TestAProbeDispatchIn5xxIsRetriedNotRed(t *testing.T) {
	t.Parallel()
	h, o := bakingWithProbeOutage(t)
	h.clock.set(h.rollout().WakeAt) // the first reading is due
	h.tickAs(true)
	if r := h.rollout(); r.Machine.Phase == PhaseDone || r.Machine.Bake.Red != 0 {
		t.Fatalf("after a probe dispatch answered 502: %s, %d red (%s); want no reading yet",
			r.Machine.Status, r.Machine.Bake.Red, r.Machine.Stages[0].Gate)
	}
	o.set(false)
	posted := 0
	for range 50 {
		r := h.rollout()
		if r.Machine.Phase == PhaseDone {
			break
		}
		h.clock.set(r.WakeAt)
		h.tickAs(true)
		for _, in := range o.dispatched()[posted:] {
			post := ProbePost{Reading: fmt.Sprint(in["reading"])}
			var probes []ProbeTarget
			_ = json.Unmarshal([]byte(fmt.Sprint(in["probes"])), &probes)
			for _, p := range probes {
				post.Results = append(post.Results, RunnerProbe{URL: p.URL, Host: p.Host, Status: 200})
			}
			if _, err := h.x.acceptProbes(context.Background(), h.id, testRepo, post); err != nil {
				t.Fatalf("post of reading %s: %v", post.Reading, err)
			}
			posted++
			h.tickAs(false)
		}
	}
	r := h.rollout()
	if r.Machine.Status != Succeeded {
		t.Fatalf("status %s (%s), want succeeded once the probes could be dispatched", r.Machine.Status, r.Machine.Failure)
	}
	if ds := o.dispatched(); len(ds) != 2 || ds[0]["reading"] != "0.0.-1.1" {
		t.Errorf("probe dispatches %v, want the first reading's retried, then the second's", ds)
	}
}

// A probe workflow that cannot be dispatched for the whole of its
// reading's interval is a missing reading: red, as one whose results never
// came.
func TestAProbeDispatchIn5xxForItsWholeIntervalIsRed(t *testing.T) {
	t.Parallel()
	h, o := bakingWithProbeOutage(t)
	start := h.rollout().WakeAt
	for range 50 {
		r := h.rollout()
		if r.Machine.Phase == PhaseDone {
			break
		}
		h.clock.set(r.WakeAt)
		h.tickAs(true)
	}
	r := h.rollout()
	if r.Machine.Status != Failed || !strings.Contains(r.Machine.Failure, "not dispatched") {
		t.Fatalf("status %s (%s), want failed: the probes were never dispatched", r.Machine.Status, r.Machine.Failure)
	}
	if got := h.clock.Now().Sub(start); got < 30*time.Second {
		t.Errorf("red %s after the reading was due, want no sooner than its interval (30s)", got)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.tries < 2 {
		t.Errorf("%d probe dispatches tried, want the probe workflow asked for again", o.tries)
	}
}

// A probe workflow sent only after 5xx answers, late in its reading's
// interval, gets the whole interval for its results from the dispatch
// that got through, as README says (an interval after the dispatch), not
// what was left of the first try's: its runners are not red for the
// seconds GitHub took to answer.
func TestAProbeDispatchSentAfter5xxGetsAWholeInterval(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h, o := bakingWithProbeOutageOn(t, dbURL)
		due := h.rollout().WakeAt // the first reading is due
		h.clock.set(due)
		h.tickAs(true)
		h.notRedYet(t, "after a probe dispatch answered 502")

		// GitHub answers again 25 s into the 30 s interval.
		o.set(false)
		sent := due.Add(25 * time.Second)
		h.clock.set(sent)
		h.tickAs(true)
		ds := o.dispatched()
		if len(ds) != 1 || ds[0]["reading"] != "0.0.-1.1" {
			t.Fatalf("probe dispatches %v, want the first reading's, sent at last", ds)
		}
		if r := h.notRedYet(t, "once the probe workflow is sent"); !r.WakeAt.Equal(sent.Add(30 * time.Second)) {
			t.Errorf("next tick at %s, want the results awaited until %s, an interval after the dispatch that got through",
				r.WakeAt, sent.Add(30*time.Second))
		}

		// Past the first try's interval, within the dispatch's.
		h.clock.set(due.Add(31 * time.Second))
		h.tickAs(true)
		h.notRedYet(t, "6 s after the probe workflow was sent")

		post := ProbePost{Reading: "0.0.-1.1"}
		var probes []ProbeTarget
		_ = json.Unmarshal([]byte(fmt.Sprint(ds[0]["probes"])), &probes)
		for _, p := range probes {
			post.Results = append(post.Results, RunnerProbe{URL: p.URL, Host: p.Host, Status: 200})
		}
		if _, err := h.x.acceptProbes(context.Background(), h.id, testRepo, post); err != nil {
			t.Fatalf("post of reading %s: %v", post.Reading, err)
		}
		h.tickAs(false)
		if all, red := h.readingsOf(); all != 1 || red != 0 {
			t.Errorf("%d readings, %d red, once the runners posted; want the first reading taken, green", all, red)
		}
	})
}
