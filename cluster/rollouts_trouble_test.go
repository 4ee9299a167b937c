package cluster

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Once the Deployments were released without the Rollouts (their lists
// failed for DefaultListPatience), a request that succeeds and one that
// fails again make /healthz say the error at once, but not that the lists
// have failed for more than 30 s in a row: they have not.
func TestARolloutListThatFailsAgainIsNotSaidToHaveFailedForLong(t *testing.T) {
	t.Parallel()
	webhook := errors.New(`conversion webhook for argoproj.io/v1beta1, Kind=Rollout failed`)
	list := newListState(DefaultListPatience)
	list.note(webhook)
	list.mu.Lock()
	list.since = time.Now().Add(-2 * DefaultListPatience) // failing for a minute
	list.mu.Unlock()
	a := &Agent{cfg: Config{Namespace: "shop", ListPatience: DefaultListPatience}, rolloutWatch: &startedWatch{list: list}, rolloutsPending: true}
	long := "has failed for more than " + DefaultListPatience.String()
	if got := a.rolloutsTrouble(); !strings.Contains(got, long) || !strings.Contains(got, "conversion webhook") {
		t.Fatalf("after a minute of failures /healthz says %q; want it to say the lists %s, naming the error", got, long)
	}

	list.note(nil)
	list.note(webhook)
	got := a.rolloutsTrouble()
	if !strings.Contains(got, "cannot watch Argo Rollouts") || !strings.Contains(got, "conversion webhook") {
		t.Errorf("after a failure that follows a success /healthz says %q; want it to name the error", got)
	}
	if strings.Contains(got, long) {
		t.Errorf("after a failure that follows a success /healthz says %q: the lists have not failed for that long", got)
	}
}
