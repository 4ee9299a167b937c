package rollbackflow_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/recoveryflow/e2etest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// Two replicas on one PostgreSQL database, each asked at the same moment
// to roll back one environment (a person's retry through the load
// balancer, two people at once): the same rollback twice to each, and one
// to another target. Whichever replica takes each request, one rollback is
// accepted, the same one asked again is a duplicate of it, the other
// target is refused naming it, and one pull request is opened.
func TestReplicasRaceToRollBackOneEnvironmentOpenOnePullRequest(t *testing.T) {
	t.Parallel()
	reps := e2etest.StartReplicas(t, testdb.URL(t, "postgres"),
		app.Options{GitHubClock: ghclient.NewStepClock(time.Now().UTC())}, 2)
	s := sceneOn(t, reps[0])
	envs := raceEnvironmentsOf(s)
	for _, env := range envs {
		same := fmt.Sprintf(`{"app":"checkout","environment":%q,"reason":"r3 leaks memory"}`, env)
		other := fmt.Sprintf(`{"app":"checkout","environment":%q,"to":"r1:prod-eu/%s","reason":"r2 is slow too"}`, env, env)
		asks := []rollbackAsk{{reps[0].URL, same}, {reps[1].URL, same}, {reps[0].URL, same}, {reps[1].URL, same}, {reps[1].URL, other}}
		status, out := postAtOnce(t, asks)
		counts := map[int]int{}
		for _, st := range status {
			counts[st]++
		}
		// The same rollback asked again is a 202 duplicate; which of the two
		// targets wins the race is not fixed, so the loser's 409 may be one
		// answer or four.
		if counts[http.StatusAccepted]+counts[http.StatusConflict] != len(asks) || counts[http.StatusConflict] == 0 {
			t.Errorf("%s: answers %v (%q), want 202s and at least one 409", env, status, out)
		}
	}
	s.Settle(jobKinds...)
	for _, env := range envs {
		onePullRequest(t, s, env)
	}
	if n := s.Int(`SELECT COUNT(*) FROM river_job WHERE kind = 'rollback_pull_request'`); n != len(envs) {
		t.Errorf("rollback pull request jobs = %d, want one per environment (%d)", n, len(envs))
	}
}
