package rolloutflow

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// target is a host that answers its /healthz with status, counting probes.
type target struct {
	srv    *httptest.Server
	status atomic.Int32
	probes atomic.Int32
}

func newTarget(t *testing.T) *target {
	tg := &target{}
	tg.status.Store(200)
	tg.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tg.probes.Add(1)
		w.WriteHeader(int(tg.status.Load()))
	}))
	t.Cleanup(tg.srv.Close)
	return tg
}

func (tg *target) host() string { return strings.TrimPrefix(tg.srv.URL, "http://") }

// twoTargets are two hosts in the order the plan batches them (by host).
func twoTargets(t *testing.T) (*target, *target) {
	a, b := newTarget(t), newTarget(t)
	if b.host() < a.host() {
		return b, a
	}
	return a, b
}

// probeConfig is one wave over two hosts, one batch each, gated after the
// first batch by probes sent from the server.
func probeConfig(a, b *target) string {
	return fmt.Sprintf(`version: 1
apps:
  checkout:
    environments:
      prod:
        cluster: prod-eu
        targets:
          - {host: "%s", labels: {region: eu-1, az: eu-1a}}
          - {host: "%s", labels: {region: eu-1, az: eu-1a}}
        rollout:
          waves:
            - {name: all, select: "region=eu-1", bake: 1m, batch_bake: 1m}
          health:
            interval: 30s
            probes:
              - {url: "http://{host}/healthz", from: server}
`, a.host(), b.host())
}

func TestBatchGateProbesOnlyTheBatchAndStopsThePass(t *testing.T) {
	t.Parallel()
	t.Run("green batch, red host in the next batch: the stage gate fails", func(t *testing.T) {
		a, b := twoTargets(t)
		b.status.Store(500)
		h := newHarness(t, "stop", "", time.Minute)
		h.gh.PutFile(testRepo, "main", ".github/ripcord.yml", probeConfig(a, b))
		h.start(nil)
		r := h.run(nil)
		if len(h.dispatches()) != 2 || r.Machine.Status != Failed {
			t.Fatalf("%d dispatches, status %s: want both batches, then the stage gate red", len(h.dispatches()), r.Machine.Status)
		}
		// The batch gate (1m, every 30s: 2 readings) probes the first batch's
		// host only; b is probed by the stage gate alone.
		if a.probes.Load() < 3 || b.probes.Load() != 1 {
			t.Errorf("probes: a %d, b %d; want a by both gates, b once by the stage gate", a.probes.Load(), b.probes.Load())
		}
		if g := r.Machine.Stages[0].Gate; !strings.Contains(g, b.host()) || !strings.Contains(g, "500") {
			t.Errorf("gate %q does not name the red host and its status", g)
		}
	})
	t.Run("red batch gate: later batches are not touched", func(t *testing.T) {
		a, b := twoTargets(t)
		a.status.Store(503)
		h := newHarness(t, "stop", "", time.Minute)
		h.gh.PutFile(testRepo, "main", ".github/ripcord.yml", probeConfig(a, b))
		h.start(nil)
		r := h.run(nil)
		if len(h.dispatches()) != 1 || r.Machine.Status != Failed || !strings.Contains(r.Machine.Failure, "gate after deploy@all#0") {
			t.Fatalf("%d dispatches, status %s, failure %q", len(h.dispatches()), r.Machine.Status, r.Machine.Failure)
		}
		if b.probes.Load() != 0 {
			t.Errorf("b was probed %d times though its batch never ran", b.probes.Load())
		}
	})
}
