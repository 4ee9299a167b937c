package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/cluster/actionapi"
)

// actionServer stands in for the server's actions API: it hands out its
// actions to every poll and records the results posted.
type actionServer struct {
	*httptest.Server
	mu       sync.Mutex
	actions  []actionapi.Action
	polls    []string // the resume parameter of each poll
	failPoll int      // polls to answer 500
	results  map[string][]actionapi.Result
}

func newActionServer(t *testing.T, actions ...actionapi.Action) *actionServer {
	s := &actionServer{actions: actions, results: map[string][]actionapi.Result{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if r.Method == http.MethodGet {
			s.polls = append(s.polls, r.URL.Query().Get("resume"))
			if s.failPoll > 0 {
				s.failPoll--
				http.Error(w, "boom", http.StatusInternalServerError)
				return
			}
			_ = json.NewEncoder(w).Encode(actionapi.Actions{Actions: s.actions})
			s.actions = nil
			return
		}
		var res actionapi.Result
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &res)
		id := r.URL.Path[len("/api/v1/clusters/prod-eu/actions/"):]
		s.results[id] = append(s.results[id], res)
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *actionServer) resultsOf(id string) []actionapi.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]actionapi.Result(nil), s.results[id]...)
}

func newRunner(t *testing.T, srv *actionServer, cs *fake.Clientset, stateDir string, port int) *actionRunner {
	j, err := openJournal(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	return &actionRunner{base: actionsURL(srv.URL, "prod-eu"), agent: "agent-1", http: &http.Client{Timeout: 5 * time.Second},
		token: func() (string, error) { return "tok", nil }, journal: j, roll: newRollbacker(cs, port), wait: time.Millisecond, maxBackoff: time.Second,
		metrics: newMetrics(), log: slog.New(slog.NewTextHandler(io.Discard, nil)), now: func() time.Time { return t0 },
		inflight: map[string]bool{}}
}

func TestTheJournalIsWrittenBeforeTheClusterIsTouched(t *testing.T) {
	t.Parallel()
	port := podServers(t, healthy)
	cs := fake.NewClientset(servedDeployment()...)
	srv := newActionServer(t)
	r := newRunner(t, srv, cs, t.TempDir(), port)
	journaled := false
	cs.PrependReactor("patch", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		_, journaled, _ = r.journal.get("act_1")
		return false, nil, nil
	})
	r.carryOut(context.Background(), rollbackAction())
	if !journaled {
		t.Error("the Deployment was patched before the action was in the journal: a crash there could repeat it")
	}
	if res := srv.resultsOf("act_1"); len(res) != 1 || res[0].Status != actionapi.StatusDone || res[0].Agent != "agent-1" {
		t.Errorf("reported %+v", res)
	}
}

func TestAnActionFinishedBeforeARestartIsReportedAgainNotRepeated(t *testing.T) {
	t.Parallel()
	port := podServers(t, healthy)
	dir := t.TempDir()
	cs := fake.NewClientset(servedDeployment()...)
	srv := newActionServer(t)
	newRunner(t, srv, cs, dir, port).carryOut(context.Background(), rollbackAction())
	calls := len(cs.Actions())

	// The agent restarts before the server took the result: the server
	// hands the claimed action back on the resume poll.
	newRunner(t, srv, cs, dir, port).carryOut(context.Background(), rollbackAction())
	if len(cs.Actions()) != calls {
		t.Errorf("the restarted agent made %d more Kubernetes calls for a finished action", len(cs.Actions())-calls)
	}
	res := srv.resultsOf("act_1")
	if len(res) != 2 || res[1].Status != res[0].Status || len(res[1].Audit) != len(res[0].Audit) {
		t.Errorf("results %+v; want the same result twice", res)
	}
}

func TestAnAgentStoppedMidActionLeavesItForTheNextStart(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset(servedDeployment()...)
	srv := newActionServer(t)
	dir := t.TempDir()
	r := newRunner(t, srv, cs, dir, podServers(t, slow))
	ctx, cancel := context.WithCancel(context.Background())
	cs.PrependReactor("patch", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		cancel() // SIGTERM arrives while the rollback runs
		return false, nil, nil
	})
	r.carryOut(ctx, rollbackAction())
	e, found, _ := r.journal.get("act_1")
	if !found || e.Result != nil || len(srv.resultsOf("act_1")) != 0 {
		t.Errorf("journal %+v (found %v), reported %v; want started, unfinished and unreported", e, found, srv.resultsOf("act_1"))
	}
}

// SIGTERM arrives after the agent claimed the action and read the
// Deployment, before its patch. Nothing was tried, so the agent gives the
// action back (not_started, saying why, with no audit event: no rollback
// began) for its next start or another replica, instead of failing it and
// with it the episode. The journal keeps the action started without a
// result: should the server not have heard, the next start with this state
// folder resumes it, reading the Deployment before it patches.
func TestAnAgentStoppedBeforeThePatchGivesTheActionBack(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset(servedDeployment()...)
	srv := newActionServer(t)
	r := newRunner(t, srv, cs, t.TempDir(), 1)
	ctx, cancel := context.WithCancel(context.Background())
	cs.PrependReactor("get", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		cancel() // the fake client answers all the same, as a read already on its way would
		return false, nil, nil
	})
	r.carryOut(ctx, rollbackAction())
	res := srv.resultsOf("act_1")
	if len(res) != 1 || res[0].Status != actionapi.StatusNotStarted || res[0].Outcome != actionapi.OutcomeNotStarted ||
		res[0].ErrorType != "agent_stopped" || res[0].Agent != "agent-1" || len(res[0].Audit) != 0 ||
		!strings.Contains(res[0].Reason, "nothing was changed") {
		t.Fatalf("reported %+v; want one not_started result, agent_stopped, with its reason and no audit event", res)
	}
	if patches(cs) != 0 {
		t.Errorf("%d patches; want none after SIGTERM", patches(cs))
	}
	if e, found, _ := r.journal.get("act_1"); !found || e.Result != nil {
		t.Errorf("journal %+v (found %v); want the action started, without a result, for a restart to resume", e, found)
	}

	// The restarted agent (same state folder) is handed the action again
	// and carries it out.
	port := podServers(t, healthy)
	again := newRunner(t, srv, cs, r.journal.dir, port)
	again.carryOut(context.Background(), rollbackAction())
	if res := srv.resultsOf("act_1"); len(res) != 2 || res[1].Status != actionapi.StatusDone {
		t.Errorf("after the restart: reported %+v; want the rollback done", res)
	}
	if patches(cs) != 1 {
		t.Errorf("%d patches; want the restarted agent's one", patches(cs))
	}
}

// A server from before not_started answers it 400 naming the outcome, as
// any outcome it does not know. The agent then reports the action failed,
// agent_stopped, as agents before not_started did, so that server ends the
// episode at once rather than wait out its claim timeout; the journal keeps
// that result, so a restart does not carry the action out after all.
func TestAnAgentStoppedBeforeThePatchTellsAnOldServerTheActionFailed(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var posted []actionapi.Result
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var res actionapi.Result
		_ = json.NewDecoder(r.Body).Decode(&res)
		mu.Lock()
		posted = append(posted, res)
		mu.Unlock()
		if res.Outcome == actionapi.OutcomeNotStarted {
			// What app/clusteractions answered before it knew not_started.
			pipeline.WriteError(w, http.StatusBadRequest, "outcome",
				fmt.Sprintf("outcome must be rolled_back, skipped, alert or rollback_failed, got %q", res.Outcome))
			return
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	cs := fake.NewClientset(servedDeployment()...)
	r := newRunner(t, &actionServer{Server: srv}, cs, t.TempDir(), 1)
	ctx, cancel := context.WithCancel(context.Background())
	cs.PrependReactor("get", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		cancel()
		return false, nil, nil
	})
	r.carryOut(ctx, rollbackAction())
	mu.Lock()
	defer mu.Unlock()
	if len(posted) != 2 || posted[0].Status != actionapi.StatusNotStarted ||
		posted[1].Status != actionapi.StatusFailed || posted[1].Outcome != actionapi.OutcomeRollbackFailed ||
		posted[1].ErrorType != "agent_stopped" || len(posted[1].Audit) != 1 || posted[1].Audit[0].Type != "rollback_failed" {
		t.Fatalf("posted %+v; want not_started, then rollback_failed agent_stopped with its audit event", posted)
	}
	if e, found, _ := r.journal.get("act_1"); !found || e.Result == nil || e.Result.ErrorType != "agent_stopped" {
		t.Errorf("journal %+v (found %v); want the failed result kept for a restart", e, found)
	}
}

// A restarted agent resuming an action an earlier run started cannot
// tell whether that run's patch landed until it has read the Deployment:
// stopped before that read, it leaves the action for the next start.
func TestAResumedActionStoppedBeforeItsReadIsNotReportedNotDone(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset(servedDeployment()...)
	srv := newActionServer(t)
	r := newRunner(t, srv, cs, t.TempDir(), 1)
	if err := r.journal.put(journalEntry{Action: rollbackAction(), StartedAt: t0}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cs.PrependReactor("get", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, context.Canceled
	})
	r.carryOut(ctx, rollbackAction())
	if res := srv.resultsOf("act_1"); len(res) != 0 {
		t.Errorf("reported %+v; want nothing until a start reads the Deployment", res)
	}
}

func TestPollsAskForClaimedActionsAtStartAndAfterAnError(t *testing.T) {
	t.Parallel()
	srv := newActionServer(t)
	srv.failPoll = 1
	r := newRunner(t, srv, fake.NewClientset(), t.TempDir(), 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.run(ctx); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		srv.mu.Lock()
		n := len(srv.polls)
		srv.mu.Unlock()
		if n >= 3 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.polls) < 3 || srv.polls[0] != "true" || srv.polls[1] != "true" || srv.polls[2] != "" {
		t.Errorf("resume per poll %q; want true at start, true after the failed poll, then not", srv.polls)
	}
}

// A server that answers a long poll at once with no action (one that is
// stopping does, and so may a proxy or an older server) must not make the
// agent poll in a tight loop: it waits a moment before it asks again.
func TestAnEmptyAnswerSoonerThanTheWaitIsNotPolledAgainAtOnce(t *testing.T) {
	t.Parallel()
	srv := newActionServer(t)
	r := newRunner(t, srv, fake.NewClientset(), t.TempDir(), 1)
	r.wait = 20 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	r.run(ctx)
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if n := len(srv.polls); n > 3 {
		t.Errorf("%d polls in one second against a server that answers at once; want a pause between them", n)
	}
}

// A result the server refuses with a 403 that names a field is refused for
// good, as with a 400: reporting it again would get the same answer for
// ever. (A 403 that names no field refuses the token and is retried; see
// TestAnotherClustersTokenOnTheActionsAPISaysWhereTheTokenCameFrom.)
func TestAResultRefusedBy403NamingAFieldIsNotReportedAgain(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	posts := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		posts++
		pipeline.WriteError(w, http.StatusForbidden, "agent", "the action was claimed by agent agent-2, not agent-1")
	}))
	t.Cleanup(srv.Close)
	r := newRunner(t, &actionServer{Server: srv}, fake.NewClientset(), t.TempDir(), 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r.report(ctx, r.log, rollbackAction(), actionapi.Result{Status: actionapi.StatusDone})
	if ctx.Err() != nil {
		t.Fatal("report kept retrying a result the server refused with a 403 naming a field")
	}
	mu.Lock()
	defer mu.Unlock()
	if posts != 1 {
		t.Errorf("the result was posted %d times, want 1", posts)
	}
}
