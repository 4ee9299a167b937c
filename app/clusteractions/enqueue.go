package clusteractions

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/records"
)

// Action is a cluster action to queue. For Kind "rollback" (the only kind):
// roll Container (or the container named like Deployment, or its only one)
// of Deployment in Namespace back to TargetVersion, if and only if
// FailedVersion is the version running. TargetVersion is required: it is
// the eligible release the records chose, and the agent rolls back to
// nothing else (it never guesses one from the cluster's ReplicaSets).
type Action struct {
	Cluster       string
	Kind          string
	Namespace     string
	Deployment    string
	Container     string
	TargetVersion string
	FailedVersion string
	// ReleaseID is the rollback's own release id (it goes on the
	// Deployment's ripcord.dev/release-id annotation, so the facts that
	// follow join the rollback release); RollbackOf is the failed release.
	ReleaseID  string
	RollbackOf string
	Reason     string
	// Health overrides the agent's health-check settings (optional).
	Health *actionapi.Health
	// Key makes Enqueue idempotent: a second Enqueue with the key of an
	// action already queued for the cluster returns that action's id and
	// queues nothing. Empty means ReleaseID when set (a rollback release
	// is rolled out once), else every call queues a new action.
	Key string
}

var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)
	tag          = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
)

// Validate names every field that is wrong (each a *records.FieldError).
func (a Action) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &records.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if a.Cluster == "" {
		bad("cluster", "is required")
	}
	if a.Kind != actionapi.KindRollback {
		bad("kind", "must be %q, got %q", actionapi.KindRollback, a.Kind)
	}
	if !dnsLabel.MatchString(a.Namespace) {
		bad("namespace", "%q is not a Kubernetes namespace name", a.Namespace)
	}
	if !dnsSubdomain.MatchString(a.Deployment) {
		bad("deployment", "%q is not a Kubernetes Deployment name", a.Deployment)
	}
	if a.Container != "" && !dnsLabel.MatchString(a.Container) {
		bad("container", "%q is not a Kubernetes container name", a.Container)
	}
	if !tag.MatchString(a.FailedVersion) {
		bad("failed_version", "%q is not an image tag (the rollback happens only when this version runs)", a.FailedVersion)
	}
	if !tag.MatchString(a.TargetVersion) {
		bad("target_version", "%q is not an image tag (the version to roll back to, from the records)", a.TargetVersion)
	}
	if a.TargetVersion != "" && a.TargetVersion == a.FailedVersion {
		bad("target_version", "is the failed version %q", a.FailedVersion)
	}
	return errors.Join(errs...)
}

// Enqueue queues an action for its cluster's agent inside the caller's
// transaction (so it exists exactly when the caller's decision does) and
// returns its id. It is idempotent under Action.Key.
func Enqueue(ctx context.Context, tx *sql.Tx, a Action) (string, error) {
	if err := a.Validate(); err != nil {
		return "", fmt.Errorf("enqueue cluster action: %w", err)
	}
	key := a.Key
	if key == "" {
		key = a.ReleaseID
	}
	id, err := newID()
	if err != nil {
		return "", err
	}
	if key == "" {
		key = id
	}
	now := time.Now().UTC()
	spec, err := json.Marshal(actionapi.Action{ID: id, Cluster: a.Cluster, Kind: a.Kind, Namespace: a.Namespace,
		Deployment: a.Deployment, Container: a.Container, TargetVersion: a.TargetVersion, FailedVersion: a.FailedVersion,
		ReleaseID: a.ReleaseID, RollbackOf: a.RollbackOf, Reason: a.Reason, Health: a.Health, CreatedAt: now})
	if err != nil {
		return "", fmt.Errorf("enqueue cluster action: encode: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO cluster_actions
		(id, cluster, action_key, kind, spec, release_id, rollback_of, state, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8)
		ON CONFLICT (cluster, action_key) DO NOTHING`,
		id, a.Cluster, key, a.Kind, string(spec), a.ReleaseID, a.RollbackOf, store.Micros(now)); err != nil {
		return "", fmt.Errorf("enqueue cluster action for %s: %w", a.Cluster, err)
	}
	var got string
	if err := tx.QueryRowContext(ctx, `SELECT id FROM cluster_actions WHERE cluster = $1 AND action_key = $2`,
		a.Cluster, key).Scan(&got); err != nil {
		return "", fmt.Errorf("enqueue cluster action for %s: read back: %w", a.Cluster, err)
	}
	return got, nil
}

func newID() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("cluster action id: %w", err)
	}
	return "act_" + hex.EncodeToString(b[:]), nil
}
