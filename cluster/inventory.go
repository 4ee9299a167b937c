package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// sendInventories sends the inventory of the watches (every tracked
// workload's uid) once they have synced, then at every resync, so the server
// learns of deletions the agent could not report: a deletion fact dropped
// from a full spool, or one that happened while no agent ran (an agent that
// starts after a deletion never sees the object, and a deleted object is
// never resynced). While the server cannot take it, it is sent again with
// backoff, taken afresh each time. A watch that joins later (Argo Rollouts
// found after the start) sends one at once, so the server need not wait a
// resync to learn of its workloads' deletions; so does a tracked
// Deployment that a tracked Rollout takes over or lets go (refsChanged),
// inventoryGather later, so that the changes of one moment (a Rollout
// applied with its Deployment, several Rollouts at once) make one.
func (a *Agent) sendInventories(ctx context.Context) {
	backoff := time.Duration(0)
	for {
		wait := a.cfg.Resync
		err := a.sendInventory(ctx)
		switch {
		case err == nil:
			a.deliver.note(nil)
			backoff = 0
		case ctx.Err() != nil:
			return
		case isRejection(err) || isNotFound(err):
			// A server that refuses it (or predates it) will until it changes.
			a.cfg.Log.Error("the server refused the inventory; sending it again at the next resync", "err", err)
		default:
			// The server cannot be reached or refuses the token: /healthz
			// says so, as for the facts.
			a.deliver.note(err)
			backoff = min(max(backoff*2, deliverMinBackoff), a.cfg.MaxBackoff)
			wait = backoff
			a.cfg.Log.Warn("cannot send the inventory", append([]any{"err", err, "retry_in", wait}, refusedToken(err, a.cfg.TokenFrom)...)...)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		case <-a.watchJoined:
		case <-a.watch.refsChanged:
			select {
			case <-ctx.Done():
				return
			case <-time.After(inventoryGather):
			}
			select {
			case <-a.watch.refsChanged:
			default:
			}
		}
	}
}

const (
	// inventorySpoolPoll is how often an inventory looks whether the
	// facts spooled before it are delivered.
	inventorySpoolPoll = 100 * time.Millisecond
	// inventoryGather is how long after a tracked Deployment was taken
	// over by a Rollout, or let go, the inventory is sent: the server
	// stops (or starts again) counting it within seconds, and the
	// changes of one moment make one inventory.
	inventoryGather = 2 * time.Second
)

func isNotFound(err error) bool {
	se, ok := err.(*statusError)
	return ok && se.Status == http.StatusNotFound
}

// sendInventory posts what the watches hold now. Its time is taken before
// the caches are read: a workload whose fact was observed before it and
// that is missing from the list was deleted (an informer updates its cache
// before it hands the event to the handler that stamps the fact). It is
// posted once the facts spooled before that time are delivered: the server
// stamps the deletions it infers with the inventory's time, and would drop
// an earlier fact still on its way (the new workload of a name deleted and
// created again during an outage) as stale.
func (a *Agent) sendInventory(ctx context.Context) error {
	at := a.cfg.Now().UTC()
	spooled := a.deliver.spool.Newest()
	sources, uids, withheld := a.watch.inventory()
	for a.deliver.spool.Holds(spooled) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(inventorySpoolPoll):
		}
	}
	body, err := json.Marshal(map[string]any{"observed_at": at, "namespace": a.cfg.Namespace,
		"sources": sources, "uids": uids})
	if err != nil {
		return fmt.Errorf("encode the inventory: %w", err)
	}
	var out struct {
		Deleted []struct {
			Workload string `json:"workload"`
			UID      string `json:"uid"`
			Outcome  string `json:"outcome"`
		} `json:"deleted"`
	}
	u := strings.TrimSuffix(a.cfg.Server, "/") + "/api/v1/facts/" + url.PathEscape(a.cfg.Cluster) + "/inventory"
	if err := doJSON(ctx, a.cfg.HTTP, a.cfg.Token, http.MethodPost, u, body, &out); err != nil {
		return err
	}
	for _, d := range out.Deleted {
		if withheld[d.UID] {
			a.cfg.Log.Info("the server no longer counts as running a Deployment a tracked Rollout took over (spec.workloadRef): "+
				"the Rollout runs its template; it counts it again once no tracked Rollout references it",
				"workload", d.Workload, "outcome", d.Outcome)
			continue
		}
		a.cfg.Log.Info("the server still counted a workload the cluster no longer holds; reported deleted",
			"workload", d.Workload, "outcome", d.Outcome)
	}
	return nil
}
