// Package cluster is ripcord's cluster agent: it watches Deployments and Argo
// Rollouts labelled ripcord.dev/tracked=true, turns their status into facts
// (records.Fact) that it delivers through a bounded on-disk spool, and carries
// out the actions the server queues for its cluster — a Deployment rollback
// as seed 000 describes it, with rollout and health verification.
//
// The pure parts (image references, container choice, phase mapping) are
// plain functions; the agent, the rollback and the health check take a
// client-go kubernetes.Interface (dynamic.Interface for Rollouts), so tests
// use client-go's fake clientset or a real API server (internal/k8stest).
// The package never imports app: the server side of actions lives in
// app/clusteractions and the two share cluster/actionapi.
package cluster

// Labels and annotations the agent reads and writes.
const (
	// TrackedLabel selects the workloads the agent watches.
	TrackedLabel = "ripcord.dev/tracked"
	// ReleaseIDAnnotation carries the release id on the workload's own
	// metadata, never the pod template, so it never forces a new ReplicaSet.
	ReleaseIDAnnotation = "ripcord.dev/release-id"
	// VersionLabel is the version label ripcord writes on a rollback (the
	// Deployment and its pod template) and reads from ReplicaSets.
	VersionLabel = "app.kubernetes.io/version"
	// ShortVersionLabel is the other common spelling, updated when present.
	ShortVersionLabel = "version"
)
