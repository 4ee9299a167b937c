package clusteractions_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/clusteractions"
	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/internal/testdb"
)

// rollbackIn is rollback(release) of the checkout Deployment in namespace.
func rollbackIn(namespace, release string) clusteractions.Action {
	a := rollback(release)
	a.Namespace = namespace
	return a
}

func ids(actions []actionapi.Action) []string {
	out := []string{}
	for _, a := range actions {
		out = append(out, a.ID)
	}
	return out
}

// Two agents of one cluster, each deployed with its own --namespace (and
// often allowed to patch Deployments only there), are each handed the
// actions of their namespace: the first to poll never takes the other's
// rollback, which it would try on a namespace it does not watch while the
// right agent never saw it.
func TestAnAgentOfOneNamespaceIsHandedOnlyThatNamespacesActions(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := startServer(t, dbURL)
		forA := s.enqueue(rollbackIn("team-a", "rb-a:prod-eu/prod"))
		forB := s.enqueue(rollbackIn("team-b", "rb-b:prod-eu/prod"))

		got, code := poll(s, "agent-b", "&namespace=team-b")
		if code != http.StatusOK || len(got) != 1 || got[0].ID != forB || got[0].Namespace != "team-b" {
			t.Fatalf("team-b's agent got %d %v; want only %s, team-b's action", code, ids(got), forB)
		}
		if st := s.action(forA); st.State != clusteractions.StatePending {
			t.Fatalf("team-a's action is %s by %q after team-b's agent polled; want it pending for team-a's agent", st.State, st.Agent)
		}
		got, code = poll(s, "agent-a", "&namespace=team-a")
		if code != http.StatusOK || len(got) != 1 || got[0].ID != forA {
			t.Fatalf("team-a's agent got %d %v; want %s", code, ids(got), forA)
		}
		for id, agent := range map[string]string{forA: "agent-a", forB: "agent-b"} {
			if st := s.action(id); st.State != clusteractions.StateClaimed || st.Agent != agent {
				t.Errorf("action %s is %s by %q; want claimed by %s", id, st.State, st.Agent, agent)
			}
		}
	})
}

// An agent that says no namespace watches every namespace, or is of a
// build from before agents said theirs: it is handed any of its cluster's
// actions, as such agents always were.
func TestAnAgentThatSaysNoNamespaceIsHandedAnyOfItsClustersActions(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := startServer(t, dbURL)
		for i, extra := range []string{"", "&namespace="} {
			forA := s.enqueue(rollbackIn("team-a", fmt.Sprintf("rb-a%d:prod-eu/prod", i)))
			forB := s.enqueue(rollbackIn("team-b", fmt.Sprintf("rb-b%d:prod-eu/prod", i)))
			got, code := poll(s, "agent-all", extra)
			if code != http.StatusOK || len(got) != 2 || got[0].ID != forA || got[1].ID != forB {
				t.Errorf("poll with %q: %d %v; want both %s and %s", extra, code, ids(got), forA, forB)
			}
		}
	})
}

// A long poll of one namespace's agent is not answered with, nor woken by,
// another namespace's action: it waits for one of its own, and leaves the
// other pending for its agent.
func TestALongPollWaitsForAnActionOfItsNamespace(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := startServer(t, dbURL)
		forA := s.enqueue(rollbackIn("team-a", "rb-a:prod-eu/prod"))
		type answer struct {
			actions []actionapi.Action
			code    int
		}
		got := make(chan answer, 1)
		go func() {
			a, code := poll(s, "agent-b", "&namespace=team-b&wait=20s")
			got <- answer{a, code}
		}()
		var forB string
		select {
		case a := <-got:
			t.Fatalf("team-b's long poll answered %d %v at once, with team-a's action pending; want it to wait", a.code, ids(a.actions))
		case <-time.After(time.Second):
			forB = s.enqueue(rollbackIn("team-b", "rb-b:prod-eu/prod"))
		}
		a := <-got
		if a.code != http.StatusOK || len(a.actions) != 1 || a.actions[0].ID != forB {
			t.Errorf("team-b's long poll answered %d %v; want %s, queued while it waited", a.code, ids(a.actions), forB)
		}
		if st := s.action(forA); st.State != clusteractions.StatePending {
			t.Errorf("team-a's action is %s by %q; want it left pending", st.State, st.Agent)
		}
	})
}

func TestAPollNamingABadNamespaceIsRefused(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		s := startServer(t, dbURL)
		id := s.enqueue(rollbackIn("team-a", "rb-a:prod-eu/prod"))
		var e struct{ Error, Field string }
		if code := s.call(http.MethodGet, actionsPath+"?agent=a&namespace=Team_A", euToken, nil, &e); code != http.StatusBadRequest || e.Field != "namespace" {
			t.Errorf("namespace=Team_A: %d field %q (%s); want 400 naming namespace", code, e.Field, e.Error)
		}
		if st := s.action(id); st.State != clusteractions.StatePending {
			t.Errorf("a refused poll claimed the action: %s by %q", st.State, st.Agent)
		}
	})
}
