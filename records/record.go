// Package records is where ripcord keeps what it knows about releases: the
// ReleaseRecord (one per release to one app, environment and cluster), the
// facts that sources post about workloads, the pure reducer that turns a fact
// into record changes, audit events and effects, and the stall check.
//
// Everything in this package apart from the store is pure: no I/O and no
// clock. Time is always an argument, so the same facts replayed in the same
// order give the same records, events and effects.
package records

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Kind says whether a release moves an environment forward or back.
type Kind string

const (
	KindPromote  Kind = "promote"
	KindRollback Kind = "rollback"
)

// Record is one release to one app, environment and cluster: the
// ReleaseRecord of DESIGN.md. The JSON names are the ones users see in the
// API and the CLI.
type Record struct {
	// ReleaseID is opaque and unique per app, environment and cluster, for
	// example "<chain-id>:<cluster>/<env>".
	ReleaseID   string `json:"release_id"`
	App         string `json:"app"`
	Environment string `json:"environment"`
	Cluster     string `json:"cluster"`
	Repository  string `json:"repository"`
	Kind        Kind   `json:"kind"`
	// RollbackOf names the release a rollback replaces; empty for a promote.
	RollbackOf     string `json:"rollback_of"`
	RollbackReason string `json:"rollback_reason"`
	// Image is the reference as deployed (repo:tag, repo@sha256:… or a bare
	// version for workflow deploys); Digest is the content it resolved to.
	Image          string     `json:"image"`
	Digest         string     `json:"digest"`
	GitRevision    string     `json:"git_revision"`
	ConfigRevision string     `json:"config_revision"`
	PRURL          string     `json:"pr_url"`
	PRNumber       int        `json:"pr_number"`
	FlowStartedAt  *time.Time `json:"flow_started_at"`
	State          State      `json:"state"`
	// HealthyAt is when the release first reached healthy. It is set once
	// and never cleared: eligibility depends on it surviving every later
	// state (superseded, rolled-back, aborted after a restart…).
	HealthyAt    *time.Time `json:"healthy_at"`
	RolledBackBy string     `json:"rolled_back_by"`
	// LastFactAt is the observed_at of the newest fact applied to the record.
	LastFactAt *time.Time `json:"last_fact_at"`
	// MergedAt is when the pull request of a release opened for one was
	// merged (MarkMerged). Only the stall check reads it (MarkStalled loads
	// it), so it is not part of the record that reads and the API return.
	MergedAt  *time.Time `json:"-"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
}

// Open reports whether the record can still receive facts. Only superseded
// and rolled-back records are closed; a healthy, degraded, aborted or failed
// release is still the one the cluster may report on.
func (r Record) Open() bool { return !r.State.Final() }

// SameTarget reports whether two records are releases to the same app,
// environment and cluster.
func (r Record) SameTarget(o Record) bool {
	return r.App == o.App && r.Environment == o.Environment && r.Cluster == o.Cluster
}

// ResolvedDigest is the record's digest, or the one pinned in its image
// reference when the digest field was left empty.
func (r Record) ResolvedDigest() string {
	if r.Digest != "" {
		return r.Digest
	}
	return ParseImage(r.Image).Digest
}

// Caps on the fields a caller sends (POST /api/v1/releases, and the same
// fields in facts, Fact.ValidateSent). They bound what is stored, shown and
// sent on; each is at least what the field can legitimately hold.
const (
	// MaxIDLen caps release_id, rollback_of, app, environment and cluster:
	// a Kubernetes object name (a DNS subdomain) is at most 253. The ids
	// ripcord builds for rollbacks are shortened to it too
	// (rollbackpr.Shorten); one built longer before that is still accepted
	// where it names a stored release (StoredID).
	MaxIDLen = 253
	// MaxImageLen caps an image reference.
	MaxImageLen = 1024
	// MaxReasonBytes caps rollback_reason, in bytes.
	MaxReasonBytes = 4096
	// MaxRepositoryLen caps repository: GitHub's owner (39) "/" name (100).
	MaxRepositoryLen = 140
	// MaxRevisionLen caps git_revision and config_revision: a SHA-256
	// commit id in hex (a SHA-1 one is 40).
	MaxRevisionLen = 64
	// MaxURLLen caps pr.url: a pull request's address is far shorter.
	MaxURLLen = 2048
)

// StoredID reports whether a release id is stored; it is asked only about
// an id over MaxIDLen, which only ripcord itself built, before its ids were
// shortened to the cap: such a release is still named by its facts and by
// a rollback of it. nil: none is.
type StoredID func(releaseID string) bool

// Validate checks a record as a caller submits it (POST /api/v1/releases).
// Each problem is a *FieldError naming the JSON field.
func (r Record) Validate() error { return r.validate(false, nil) }

// ValidateRegistered checks a record as release tooling registers it (POST
// /api/v1/releases): as Validate, and the cluster is required too, since
// release ids are unique per app, environment and cluster. (A record a
// workflow's task fact opens may name none.) The fields are capped too
// (MaxIDLen…): only here, where they arrive, not in Validate, which also
// checks the records ripcord opens itself, whose ids it builds from
// cluster and environment, and whose rollback reasons come from comments.
// The problems come in the order the fields are documented: release_id,
// app, environment, cluster, image, then the rest. rollback_of is capped
// as release_id is, unless it names a stored release (stored).
func (r Record) ValidateRegistered(stored StoredID) error { return r.validate(true, stored) }

func (r Record) validate(registered bool, stored StoredID) error {
	var v problems
	capped := func(field, value string, max int) {
		if registered {
			v.atMost(field, value, max)
		}
	}
	v.require("release_id", r.ReleaseID)
	capped("release_id", r.ReleaseID, MaxIDLen)
	v.require("app", r.App)
	capped("app", r.App, MaxIDLen)
	v.require("environment", r.Environment)
	capped("environment", r.Environment, MaxIDLen)
	if registered {
		v.require("cluster", r.Cluster)
	}
	capped("cluster", r.Cluster, MaxIDLen)
	v.require("image", r.Image)
	capped("image", r.Image, MaxImageLen)
	capped("repository", r.Repository, MaxRepositoryLen)
	capped("git_revision", r.GitRevision, MaxRevisionLen)
	capped("config_revision", r.ConfigRevision, MaxRevisionLen)
	switch r.Kind {
	case KindPromote:
		if r.RollbackOf != "" {
			v.add("rollback_of", `must be empty when kind is "promote"`)
		}
	case KindRollback:
		v.require("rollback_of", r.RollbackOf)
		if registered {
			v.atMostID("rollback_of", r.RollbackOf, stored)
		}
		v.require("rollback_reason", r.RollbackReason)
		if r.RollbackOf != "" && r.RollbackOf == r.ReleaseID {
			v.add("rollback_of", "cannot name the rollback release itself")
		}
	default:
		v.add("kind", `must be "promote" or "rollback", got %q`, r.Kind)
	}
	if registered {
		v.atMostBytes("rollback_reason", r.RollbackReason, MaxReasonBytes)
	}
	if r.Digest != "" && !ValidDigest(r.Digest) {
		v.add("digest", `must look like "sha256:<64 hex>" or "sha512:<128 hex>", got %q`, r.Digest)
	}
	// A malformed digest is reported above; that it differs from the
	// image's says nothing more.
	if d := ParseImage(r.Image).Digest; d != "" && ValidDigest(r.Digest) && d != r.Digest {
		v.add("digest", "%s differs from the digest pinned in image (%s)", r.Digest, d)
	}
	if r.PRNumber < 0 {
		v.add("pr_number", "must not be negative, got %d", r.PRNumber)
	}
	if registered && r.PRURL != "" {
		// The pages and check runs link it: only a web address may be one.
		capped("pr_url", r.PRURL, MaxURLLen)
		if u, err := url.Parse(r.PRURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			v.add("pr_url", "must be the pull request's http(s) address, got %q", r.PRURL)
		}
	}
	if r.State != "" && !r.State.Valid() {
		v.add("state", "unknown state %q", r.State)
	}
	return errors.Join(v...)
}

// FieldError is a validation problem with one JSON field, so the API can
// answer 400 with the field's name.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// ImageRef is an image reference split into its parts. Any part may be empty.
type ImageRef struct {
	Repository string
	Tag        string
	Digest     string
}

var digestRE = regexp.MustCompile(`^(sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})$`)

// ValidDigest reports whether d is a sha256 or sha512 content digest.
func ValidDigest(d string) bool { return digestRE.MatchString(d) }

// ParseImage splits "registry:5000/repo:tag@sha256:…" into repository, tag
// and digest. A bare digest ("sha256:…") has only a digest; a string with no
// tag and no digest (a bare version such as "v1a2b3c4-1760000000") is
// returned as the repository, so callers compare it as a whole.
func ParseImage(ref string) ImageRef {
	ref = strings.TrimSpace(ref)
	if ValidDigest(ref) {
		return ImageRef{Digest: ref}
	}
	var out ImageRef
	if at := strings.LastIndex(ref, "@"); at >= 0 {
		out.Digest = ref[at+1:]
		ref = ref[:at]
	}
	// A colon after the last slash separates the tag; one before it is a
	// registry port.
	if colon := strings.LastIndex(ref, ":"); colon > strings.LastIndex(ref, "/") {
		out.Tag = ref[colon+1:]
		ref = ref[:colon]
	}
	out.Repository = ref
	return out
}
