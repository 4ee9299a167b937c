// Package clusteractions is the server side of cluster actions: the queue of
// things ripcord asks a cluster's agent to do (a Deployment rollback for the
// `kubernetes` rollback mode), and the API the agent pulls them from. The
// server never connects into a cluster: the recovery flow calls Enqueue in
// its transaction, the agent long-polls GET /api/v1/clusters/{cluster}/actions
// with its cluster token, which claims pending actions for that agent, and
// reports how each ended with POST …/actions/{id}; the server stores the
// result and writes the agent's audit events (seed 000) to the audit log.
//
// States: pending → claimed (by one agent id) → done | failed. An action is
// handed to one agent only, so it is carried out at most once; a claim with
// no result after ClaimTimeout fails (the agent lost its state), though
// the claiming agent's own result, if it comes after all, replaces that.
// A pending action no agent claimed within ClaimTimeout of being queued is
// never handed out and fails (not_claimed: nothing was done), the same way,
// with a rollback_failed audit event: a rollback carried out long after its
// episode ended or alerted a person is one nobody expects. Both expiries
// run on each poll of the cluster and in a periodic sweep (SweepJob), so a
// cluster whose agent is down has its actions ended too. The agent's side
// of the guarantee is described in package cluster.
package clusteractions
