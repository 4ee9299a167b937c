package cluster

import (
	"io"
	"log/slog"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/ripcord/ripcord/records"
)

func TestWatcherSendsChangesAndEveryResyncButNotRepeats(t *testing.T) {
	var sent []records.Fact
	w := newWatcher("prod-eu", func() time.Time { return t0 }, func(f records.Fact) error { sent = append(sent, f); return nil },
		newMetrics(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	read := func(obj any) (records.Fact, *Skip, string) {
		f, skip := DeploymentFact("prod-eu", obj.(*appsv1.Deployment), t0)
		return f, skip, "shop/checkout"
	}
	progressing := deployment(func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 1 })
	w.observe(read, progressing, true) // first sight
	w.observe(read, deployment(func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 2 }), false)
	if len(sent) != 1 {
		t.Fatalf("sent %d facts; a status change within one phase must not send a second", len(sent))
	}
	w.observe(read, deployment(), false) // Healthy
	w.observe(read, deployment(), true)  // resync: the same state again
	if len(sent) != 3 || sent[1].Phase != records.PhaseHealthy || sent[2].FactID != sent[1].FactID {
		t.Errorf("sent %v; want Progressing, Healthy, and Healthy again on the resync", phases(sent))
	}
	w.observe(read, deployment(func(d *appsv1.Deployment) { d.Generation = 5 }), true)
	if len(sent) != 3 {
		t.Error("a status the controller has not observed was sent")
	}
}

func phases(fs []records.Fact) []records.Phase {
	out := make([]records.Phase, len(fs))
	for i, f := range fs {
		out[i] = f.Phase
	}
	return out
}
