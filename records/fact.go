package records

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Source is who saw a fact.
type Source string

const (
	SourceRollout    Source = "rollout"
	SourceDeployment Source = "deployment"
	SourceArgoCD     Source = "argocd"
	SourceTask       Source = "task"
)

// Phase is a workload's phase as a cluster source reports it (Argo Rollouts'
// status.phase spelling, plus SyncFailed from Argo CD, and Deleted: the
// source saw the workload deleted, so it runs nothing any more).
type Phase string

const (
	PhaseProgressing Phase = "Progressing"
	PhasePaused      Phase = "Paused"
	PhaseHealthy     Phase = "Healthy"
	PhaseDegraded    Phase = "Degraded"
	PhaseSyncFailed  Phase = "SyncFailed"
	PhaseDeleted     Phase = "Deleted"
)

// TaskStatus is a deploy workflow's status, as in MANA's webhook contract,
// plus cancelled: the deploy job was stopped on purpose (a person, a
// concurrency group, a matrix's fail-fast), which is no failed deploy.
type TaskStatus string

const (
	TaskInProgress TaskStatus = "in_progress"
	TaskSuccess    TaskStatus = "success"
	TaskFailed     TaskStatus = "failed"
	TaskCancelled  TaskStatus = "cancelled"
)

// Fact is what a source saw, not what it means: the reducer decides that.
// Cluster sources (rollout, deployment, argocd) fill the workload fields;
// task facts from workflows fill the task fields (MANA's contract:
// deployment_id, app, version, status, failure_type, metadata).
type Fact struct {
	// FactID is the id as sent. ripcord keys facts on ID(), which is
	// computed from the content, so a sender cannot make two different
	// facts collide or one fact count twice; stores overwrite this field.
	FactID  string `json:"id,omitempty"`
	Source  Source `json:"source"`
	Cluster string `json:"cluster,omitempty"`

	Namespace          string   `json:"namespace,omitempty"`
	Name               string   `json:"name,omitempty"`
	UID                string   `json:"uid,omitempty"`
	Generation         int64    `json:"generation,omitempty"`
	ObservedGeneration int64    `json:"observed_generation,omitempty"`
	Phase              Phase    `json:"phase,omitempty"`
	Step               int      `json:"step,omitempty"`
	StepCount          int      `json:"step_count,omitempty"`
	PodHash            string   `json:"pod_hash,omitempty"`
	Abort              bool     `json:"abort,omitempty"`
	Images             []string `json:"images,omitempty"`
	ReleaseID          string   `json:"release_id,omitempty"`
	// Revision is the gitops revision (Argo CD facts).
	Revision   string    `json:"revision,omitempty"`
	ObservedAt time.Time `json:"observed_at"`

	Repository    string     `json:"repository,omitempty"`
	WorkflowRunID int64      `json:"workflow_run_id,omitempty"`
	RunAttempt    int        `json:"run_attempt,omitempty"`
	Status        TaskStatus `json:"status,omitempty"`
	FailureType   string     `json:"failure_type,omitempty"`
	// DeploymentID is MANA's deployment_id; a task fact without a
	// release_id is joined to its record by it.
	DeploymentID string            `json:"deployment_id,omitempty"`
	App          string            `json:"app,omitempty"`
	Environment  string            `json:"environment,omitempty"`
	Version      string            `json:"version,omitempty"`
	Metadata     map[string]string `json:"metadata,omitempty"`
}

// IsTask reports whether the fact comes from a workflow rather than a cluster.
func (f Fact) IsTask() bool { return f.Source == SourceTask }

// ReleaseKey is the release the fact is about: release_id, or for a task
// fact without one, its deployment_id.
func (f Fact) ReleaseKey() string {
	if f.ReleaseID == "" && f.IsTask() {
		return f.DeploymentID
	}
	return f.ReleaseID
}

// WorkloadKey identifies the workload a cluster fact is about
// ("cluster/namespace/source/name", the source being the kind of workload,
// as kubectl writes deployment/NAME): the store keeps one Observation per
// key. A Deployment and an Argo Rollout may share a name in a namespace
// (a Rollout that took over a Deployment scaled to 0), and they are two
// workloads. Task facts have none.
func (f Fact) WorkloadKey() string {
	if f.IsTask() {
		return ""
	}
	return workloadKey(f.Cluster, f.Namespace, f.Source, f.Name)
}

// workloadKey is the key of an observation; one without a source (stored
// before sources were kept, and none could be found for it since) keeps
// the key of that time, legacyWorkloadKey.
func workloadKey(cluster, namespace string, source Source, name string) string {
	if source == "" {
		return legacyWorkloadKey(cluster, namespace, name)
	}
	return cluster + "/" + namespace + "/" + string(source) + "/" + name
}

// legacyWorkloadKey is the key observations had before migration 16 put
// the source in it: "cluster/namespace/name". Migration 16 moved every
// observation that knows its source; one that does not is found under
// this key by the next fact of a workload of that name, whose observation
// then replaces it.
func legacyWorkloadKey(cluster, namespace, name string) string {
	return cluster + "/" + namespace + "/" + name
}

// legacyKey is f's legacyWorkloadKey, "" for a task fact.
func (f Fact) legacyKey() string {
	if f.IsTask() {
		return ""
	}
	return legacyWorkloadKey(f.Cluster, f.Namespace, f.Name)
}

// ID is the fact's deterministic id: the same observation sent twice (a
// resync, a redelivery) has the same id, so the reducer can drop it.
//
// Cluster facts hash (cluster, uid, generation, phase, step, abort). The
// seed's key is (uid, generation, phase, step); cluster is added so one
// cluster cannot pre-empt another's facts, and abort because Degraded and
// Degraded-with-abort at the same step are different observations (the
// second is an abort and must not be dropped as a repeat of the first).
//
// Task facts hash (repository, workflow_run_id, run_attempt, status,
// release): the release is added because one run may deploy several
// environments (a matrix), and each posts its own facts.
func (f Fact) ID() string {
	var parts []string
	if f.IsTask() {
		parts = []string{"task", f.Repository, strconv.FormatInt(f.WorkflowRunID, 10),
			strconv.Itoa(f.RunAttempt), string(f.Status), f.ReleaseKey()}
	} else {
		parts = []string{"cluster", f.Cluster, f.UID, strconv.FormatInt(f.Generation, 10),
			string(f.Phase), strconv.Itoa(f.Step), strconv.FormatBool(f.Abort)}
	}
	h := sha256.New()
	for _, p := range parts {
		// Length-prefixing keeps ("ab","c") and ("a","bc") apart.
		fmt.Fprintf(h, "%d:%s;", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Validate checks the fields the source must send. Each problem is a
// *FieldError naming the JSON field; all problems are returned together.
func (f *Fact) Validate() error {
	var v problems
	f.validate(&v)
	return errors.Join(v...)
}

func (f *Fact) validate(v *problems) {
	if f.ObservedAt.IsZero() {
		v.add("observed_at", "is required")
	}
	switch f.Source {
	case SourceRollout, SourceDeployment, SourceArgoCD:
		f.validateCluster(v)
	case SourceTask:
		f.validateTask(v)
	case "":
		v.add("source", "is required (rollout, deployment, argocd or task)")
	default:
		v.add("source", "must be rollout, deployment, argocd or task, got %q", f.Source)
	}
}

// problems collects *FieldErrors.
type problems []error

func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, &FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

func (p *problems) require(field, value string) {
	if strings.TrimSpace(value) == "" {
		p.add(field, "is required")
	}
}

// atMost refuses a value longer than max characters (runes: a name a
// caller types counts as it reads).
func (p *problems) atMost(field, value string, max int) {
	if n := utf8.RuneCountInString(value); n > max {
		p.add(field, "must be at most %d characters, got %d", max, n)
	}
}

// atMostID is atMost(field, id, MaxIDLen), passing an id over it that
// names a stored release.
func (p *problems) atMostID(field, id string, stored StoredID) {
	if utf8.RuneCountInString(id) > MaxIDLen && stored != nil && stored(id) {
		return
	}
	p.atMost(field, id, MaxIDLen)
}

// atMostBytes refuses a value longer than max bytes (free text, kept and
// sent on as it came).
func (p *problems) atMostBytes(field, value string, max int) {
	if n := len(value); n > max {
		p.add(field, "must be at most %d bytes, got %d", max, n)
	}
}

// ValidateSent checks a fact as a source sends it (POST /api/v1/facts): as
// Validate, and the fields that open or name a record are capped as on
// POST /api/v1/releases (Record.ValidateRegistered). The caps apply to
// what arrives, not in Validate: the reducer validates stored facts again
// when it replays them, and one kept before the caps must still apply.
// release_id is capped too: the ids ripcord builds for rollbacks, which
// cluster and workflow facts echo, are shortened to MaxIDLen; one built
// longer before that passes when it names a stored release (stored).
func (f *Fact) ValidateSent(stored StoredID) error {
	var v problems
	f.validate(&v)
	v.atMostID("release_id", f.ReleaseID, stored)
	v.atMost("cluster", f.Cluster, MaxIDLen)
	for i, img := range f.Images {
		v.atMost(fmt.Sprintf("images[%d]", i), img, MaxImageLen)
	}
	if f.IsTask() {
		v.atMost("repository", f.Repository, MaxRepositoryLen)
		v.atMost("deployment_id", f.DeploymentID, MaxIDLen)
		v.atMost("app", f.App, MaxIDLen)
		v.atMost("environment", f.Environment, MaxIDLen)
		v.atMost("version", f.Version, MaxImageLen)
		// The commit becomes the record's git_revision.
		v.atMost("metadata.commit", f.Metadata["commit"], MaxRevisionLen)
	}
	return errors.Join(v...)
}

func (f *Fact) validateCluster(v *problems) {
	v.require("cluster", f.Cluster)
	v.require("namespace", f.Namespace)
	v.require("name", f.Name)
	v.require("uid", f.UID)
	if f.Generation <= 0 {
		v.add("generation", "must be positive, got %d", f.Generation)
	}
	if f.ObservedGeneration < 0 {
		v.add("observed_generation", "must not be negative, got %d", f.ObservedGeneration)
	}
	switch f.Phase {
	case PhaseProgressing, PhasePaused, PhaseHealthy, PhaseDegraded, PhaseSyncFailed, PhaseDeleted:
	case "":
		v.add("phase", "is required (Progressing, Paused, Healthy, Degraded, SyncFailed or Deleted)")
	default:
		v.add("phase", "must be Progressing, Paused, Healthy, Degraded, SyncFailed or Deleted, got %q", f.Phase)
	}
	if f.Step < 0 {
		v.add("step", "must not be negative, got %d", f.Step)
	}
	if f.StepCount < 0 {
		v.add("step_count", "must not be negative, got %d", f.StepCount)
	}
	if f.StepCount > 0 && f.Step > f.StepCount {
		v.add("step", "%d is past step_count %d", f.Step, f.StepCount)
	}
	// Argo CD reports by gitops revision; Rollouts and Deployments carry
	// the release id annotation.
	if f.Source == SourceArgoCD {
		if f.ReleaseID == "" && f.Revision == "" {
			v.add("release_id", "is required (or revision, for argocd facts)")
		}
	} else {
		v.require("release_id", f.ReleaseID)
	}
	for i, img := range f.Images {
		if strings.TrimSpace(img) == "" {
			v.add(fmt.Sprintf("images[%d]", i), "is empty")
		}
	}
}

func (f *Fact) validateTask(v *problems) {
	if owner, name, ok := strings.Cut(f.Repository, "/"); !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		v.add("repository", `must be "owner/name", got %q`, f.Repository)
	}
	if f.WorkflowRunID <= 0 {
		v.add("workflow_run_id", "must be positive, got %d", f.WorkflowRunID)
	}
	if f.RunAttempt < 1 {
		v.add("run_attempt", "must be 1 or more, got %d", f.RunAttempt)
	}
	switch f.Status {
	case TaskInProgress, TaskSuccess, TaskFailed, TaskCancelled:
	case "":
		v.add("status", "is required (in_progress, success, failed or cancelled)")
	default:
		v.add("status", "must be in_progress, success, failed or cancelled, got %q", f.Status)
	}
	v.require("app", f.App)
	v.require("environment", f.Environment)
	if f.ReleaseID == "" && f.DeploymentID == "" {
		v.add("release_id", "is required (or deployment_id)")
	}
	if f.FailureType != "" && f.Status != TaskFailed {
		v.add("failure_type", "is only meaningful with status failed, got status %q", f.Status)
	}
}
