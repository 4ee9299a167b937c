package app

import (
	"fmt"
	"net/http"
	"time"

	"github.com/ripcord/ripcord/records"
)

// inventory is what a cluster source holds at one moment: the uids of every
// workload of the listed sources it watches (in namespace, or in every
// namespace when empty), observed at ObservedAt.
type inventory struct {
	ObservedAt time.Time        `json:"observed_at"`
	Namespace  string           `json:"namespace"`
	Sources    []records.Source `json:"sources"`
	UIDs       []string         `json:"uids"`
}

// inventoryResult is a workload the inventory reported deleted.
type inventoryResult struct {
	Workload  string `json:"workload"`
	UID       string `json:"uid"`
	ReleaseID string `json:"release_id"`
	Outcome   string `json:"outcome"`
	Reason    string `json:"reason,omitempty"`
}

// postClusterInventory is POST /api/v1/facts/{cluster}/inventory: the agent
// sends, after each full list of its watches (its start and every resync),
// the uids of the workloads it holds. A workload the server still counts as
// running in that scope, last observed before the inventory and absent from
// it, is gone: a fact with phase Deleted is applied for it, exactly as if
// the agent had sent one. This is how a deletion the agent could not
// deliver (its spool overflowed, or it was not running when the workload
// was deleted, or it lost its state folder) still reaches the server: a
// deleted object is never resynced, but its absence from a full list is.
func (s *Server) postClusterInventory(w http.ResponseWriter, r *http.Request) {
	cluster := r.PathValue("cluster")
	if status, msg := s.checkClusterToken(r, cluster); status != 0 {
		writeError(w, status, "", msg)
		return
	}
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	var inv inventory
	if err := decodeStrict(body, &inv, "", `a JSON object with "observed_at", "sources" and "uids", and "namespace" when one is watched`); err != nil {
		writeFieldError(w, err)
		return
	}
	if field, msg := inv.problem(); field != "" {
		// The message names the field too, as every other 400 does: a
		// client or agent log that shows only the error read "is required".
		writeFieldError(w, &fieldError{Field: field, Message: msg})
		return
	}
	running, err := s.records.Running(r.Context(), cluster)
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	facts := inv.deletions(cluster, running)
	out := make([]inventoryResult, 0, len(facts))
	for start := 0; start < len(facts); start += maxFactsPerRequest {
		chunk := facts[start:min(start+maxFactsPerRequest, len(facts))]
		results, err := s.commitFacts(chunk, time.Now().UTC())
		if err != nil {
			s.internalError(w, r, err)
			return
		}
		for i, res := range results {
			s.metrics.facts.WithLabelValues(res.Outcome).Inc()
			f := chunk[i]
			out = append(out, inventoryResult{Workload: f.WorkloadKey(), UID: f.UID, ReleaseID: f.ReleaseID,
				Outcome: res.Outcome, Reason: res.Reason})
		}
	}
	if len(out) > 0 {
		s.log.Info("workloads missing from a cluster's inventory reported deleted", "cluster", cluster,
			"namespace", inv.Namespace, "deleted", len(out))
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted": out})
}

// problem names the first bad field of an inventory.
func (inv *inventory) problem() (field, msg string) {
	switch {
	case inv.ObservedAt.IsZero():
		return "observed_at", "is required"
	case len(inv.Sources) == 0:
		return "sources", "is required: the sources (deployment, rollout, argocd) whose every workload uids lists"
	case inv.UIDs == nil:
		return "uids", "is required (an empty list when the source holds no workload)"
	}
	for i, src := range inv.Sources {
		switch src {
		case records.SourceDeployment, records.SourceRollout, records.SourceArgoCD:
		default:
			return fmt.Sprintf("sources[%d]", i), fmt.Sprintf("must be deployment, rollout or argocd, got %q", src)
		}
	}
	return "", ""
}

// deletions are the Deleted facts for the running workloads of cluster in
// the inventory's scope that it does not hold. A workload observed at or
// after the inventory may have appeared since, so it is left alone; an
// observation without a source (stored before sources were kept, with no
// fact left for migration 15 to take it from) cannot be placed in a scope
// and is left alone too.
func (inv *inventory) deletions(cluster string, running []records.Observation) []records.Fact {
	sources := map[records.Source]bool{}
	for _, src := range inv.Sources {
		sources[src] = true
	}
	held := make(map[string]bool, len(inv.UIDs))
	for _, uid := range inv.UIDs {
		held[uid] = true
	}
	var facts []records.Fact
	for _, o := range running {
		if !sources[o.Source] || (inv.Namespace != "" && o.Namespace != inv.Namespace) || held[o.UID] ||
			!o.ObservedAt.Before(inv.ObservedAt) || o.ReleaseID == "" {
			continue
		}
		f := records.Fact{Source: o.Source, Cluster: cluster, Namespace: o.Namespace, Name: o.Name, UID: o.UID,
			Generation: max(o.Generation, 1), Phase: records.PhaseDeleted, ReleaseID: o.ReleaseID,
			ObservedAt: inv.ObservedAt.UTC()}
		f.ObservedGeneration = f.Generation
		f.FactID = f.ID()
		facts = append(facts, f)
	}
	return facts
}
