package clusteractions_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/clusteractions"
	"github.com/ripcord/ripcord/cluster"
	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/internal/k8stest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// agentPod is one pod of the agent's Deployment: its own emptyDir state
// folder, the chart's flags.
type agentPod struct {
	*cluster.Agent
	metrics string
	stop    func()
}

func newAgentPod(t *testing.T, k *k8stest.Cluster, s *server) *agentPod {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("RIPCORD_E2E_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	a, err := cluster.New(cluster.Config{Cluster: "prod-eu", Server: s.URL, Token: func() (string, error) { return euToken, nil },
		StateDir: t.TempDir(), Resync: time.Hour, PollWait: 2 * time.Second, MaxBackoff: time.Second, Rollouts: cluster.RolloutsOff,
		RolloutTimeout: 90 * time.Second, RolloutPoll: 250 * time.Millisecond, Log: log}, k.Kube, k.Dynamic)
	if err != nil {
		t.Fatal(err)
	}
	m := httptest.NewServer(a.Handler())
	t.Cleanup(m.Close)
	return &agentPod{Agent: a, metrics: m.URL + "/metrics", stop: func() {}}
}

// run starts the pod's agent; stop is SIGTERM, and waits for it to end.
func (p *agentPod) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	stopped := false
	p.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	}
	t.Cleanup(p.stop)
}

func (p *agentPod) carriedOut(t *testing.T) float64 {
	return metric(t, p.metrics, "ripcord_agent_actions_total", "", "")
}

// The agent's pod is replaced (rescheduled, or a new version), its
// emptyDir state folder with it. The pod before it had claimed an action
// and died before it touched the Deployment. Its replacement is the same
// agent: it asks for that claim and carries the action out, where a new
// id left it claimed until the server failed it an hour later
// (claim_expired) and ended the recovery episode with an alert. Two pods
// of the agent at once (a rolling update's surge) take turns: one action
// is carried out once, by one of them, and the other takes over once the
// first stops.
func TestAReplacementAgentPodFinishesItsPredecessorsClaim(t *testing.T) {
	t.Parallel()
	k := k8stest.Start(t)
	k.Namespace(ns)
	s := startServer(t, testdb.MigratedURL(t, "sqlite"))
	sc := &scene{t: t, k: k, s: s, ctx: context.Background()}
	sc.create(tracked("app", "registry:5000/team/app:v1", "v1", "r1", 1))
	sc.eventually("app to roll out", func() bool { return rolledOut(sc.get("app")) })
	skippedAction := func(n string) string {
		// v1 runs, so a rollback of v7 is skipped: carried out without a
		// patch, quickly.
		return s.enqueue(clusteractions.Action{Cluster: "prod-eu", Kind: actionapi.KindRollback, Namespace: ns,
			Deployment: "app", TargetVersion: "v1", FailedVersion: "v7", ReleaseID: "rb-" + n, RollbackOf: "r7-" + n})
	}
	claimAs := func(agent, id string) {
		t.Helper()
		var out actionapi.Actions
		if code := s.call(http.MethodGet, actionsPath+"?agent="+agent, euToken, nil, &out); code != http.StatusOK ||
			len(out.Actions) != 1 || out.Actions[0].ID != id {
			t.Fatalf("the first pod's poll: %d %+v; want action %s claimed", code, out, id)
		}
	}

	t.Run("the replacement pod carries out the claim", func(t *testing.T) {
		s.t = t
		defer func() { s.t = sc.t }()
		sc := &scene{t: t, k: k, s: s, ctx: sc.ctx}
		id := skippedAction("replaced")
		first := newAgentPod(t, k, s)
		claimAs(first.ID(), id)
		second := newAgentPod(t, k, s) // the first pod is gone, its state folder with it
		second.run(t)
		st := sc.finished(id)
		if st.Agent != first.ID() || st.Result == nil || st.Result.Outcome != actionapi.OutcomeSkipped {
			t.Errorf("action ended %s by %s: %+v; want skipped, by agent %s", st.State, st.Agent, st.Result, first.ID())
		}
		second.stop()
	})

	t.Run("two pods at once take turns", func(t *testing.T) {
		s.t = t
		defer func() { s.t = sc.t }()
		sc := &scene{t: t, k: k, s: s, ctx: sc.ctx}
		x := skippedAction("surge")
		pods := []*agentPod{newAgentPod(t, k, s), newAgentPod(t, k, s)}
		claimAs(pods[0].ID(), x) // claimed by the pod the surge replaces
		pods[0].run(t)
		pods[1].run(t)
		sc.finished(x)
		var holder, other *agentPod
		sc.eventually("one pod to have carried out the action", func() bool {
			for i, p := range pods {
				if p.carriedOut(t) > 0 {
					holder, other = p, pods[1-i]
					return true
				}
			}
			return false
		})
		// The old pod stops; the new one takes over the actions.
		holder.stop()
		y := skippedAction("after")
		if st := sc.finished(y); st.Result == nil || st.Result.Outcome != actionapi.OutcomeSkipped {
			t.Errorf("the action after the first pod stopped ended %s: %+v", st.State, st.Result)
		}
		if got := other.carriedOut(t); got != 1 {
			t.Errorf("the pod left carried out %v actions; want 1, the one queued after the other stopped: "+
				"both pods worked the claimed action", got)
		}
	})
}
