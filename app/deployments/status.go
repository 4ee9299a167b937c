package deployments

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/ripcord/ripcord/records"
)

// Status is a GitHub deployment status state, as GitHub spells it.
type Status string

// The deployment statuses ripcord writes.
const (
	StatusInProgress Status = "in_progress"
	StatusSuccess    Status = "success"
	StatusFailure    Status = "failure"
	StatusInactive   Status = "inactive"
)

// StatusFor is the deployment status that tells the truth about a record in
// state s. Several record states share one status (opened, progressing and
// paused are all in_progress), so a change between them writes nothing.
// A closed release is inactive: a newer one, or its rollback, took over.
func StatusFor(s records.State) Status {
	switch s {
	case records.StateHealthy:
		return StatusSuccess
	case records.StateDegraded, records.StateAborted, records.StateFailed:
		return StatusFailure
	case records.StateSuperseded, records.StateRolledBack:
		return StatusInactive
	default: // opened, progressing, paused
		return StatusInProgress
	}
}

// StatusOf is the deployment status of record r: StatusFor its state, but
// inactive for a release withdrawn before it ran (records.Withdrawn: its
// pull request was closed without merging). Such a release is aborted with
// no fact: nothing was deployed, so nothing failed; inactive is GitHub's
// status for a deployment that is not, and will not be, the one running.
func StatusOf(r records.Record) Status {
	if r.Withdrawn() {
		return StatusInactive
	}
	return StatusFor(r.State)
}

var (
	repoRE     = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)
	revisionRE = regexp.MustCompile(`^[0-9a-fA-F]{7,64}$`)
)

// SkipReason says why a release gets no GitHub deployment, or "" when it
// can have one. The installation is the worker's to find.
func SkipReason(r records.Record) string {
	switch {
	case r.Repository == "":
		return "the release names no repository"
	case !repoRE.MatchString(r.Repository):
		return fmt.Sprintf("repository %q is not owner/name", r.Repository)
	case r.GitRevision == "":
		return "the release has no git_revision to deploy"
	case !revisionRE.MatchString(r.GitRevision):
		return fmt.Sprintf("git_revision %q is not a commit sha", r.GitRevision)
	}
	return ""
}

// Request is what ripcord asks GitHub to create for a release.
type Request struct {
	Ref, Environment, Description string
	Payload                       Payload
	Production, Transient         bool
}

// Payload is the deployment's payload: enough for a reader of GitHub's API
// to find the release in ripcord.
type Payload struct {
	ReleaseID string `json:"release_id"`
	App       string `json:"app"`
	Cluster   string `json:"cluster,omitempty"`
	Image     string `json:"image"`
	Kind      string `json:"kind"`
}

// DeploymentFor is the deployment of release r: its git revision to its
// environment. A rollback says so in the description.
func DeploymentFor(r records.Record) Request {
	desc := fmt.Sprintf("%s %s to %s", r.App, r.Image, r.Environment)
	if r.Cluster != "" {
		desc += " (" + r.Cluster + ")"
	}
	if r.Kind == records.KindRollback {
		desc = "rollback of " + r.RollbackOf + ": " + desc
	}
	return Request{
		Ref: r.GitRevision, Environment: r.Environment, Description: clip(desc, 140),
		Payload:    Payload{ReleaseID: r.ReleaseID, App: r.App, Cluster: r.Cluster, Image: r.Image, Kind: string(r.Kind)},
		Production: Production(r.Environment), Transient: Transient(r.Environment),
	}
}

// Production reports whether an environment is one users reach: named
// production or prod, or starting with prod- or production-. GitHub shows
// production environments first.
func Production(env string) bool {
	e := strings.ToLower(env)
	return e == "production" || e == "prod" || strings.HasPrefix(e, "prod-") || strings.HasPrefix(e, "production-")
}

// Transient reports whether an environment is a short-lived one (a pull
// request's preview or review app), which GitHub may then hide once
// inactive.
func Transient(env string) bool {
	e := strings.ToLower(env)
	for _, p := range []string{"pr-", "preview", "review"} {
		if strings.HasPrefix(e, p) {
			return true
		}
	}
	return false
}

// Description is a deployment status's one line: the record's state, which
// is finer than the status (paused, aborted, rolled-back…).
func Description(r records.Record) string {
	return clip(fmt.Sprintf("ripcord: %s is %s", r.ReleaseID, r.State), 140)
}

// ReleaseURL is the release's page, where log_url and environment_url point.
func ReleaseURL(publicURL, releaseID string) string {
	return strings.TrimRight(publicURL, "/") + "/releases/" + url.PathEscape(releaseID)
}

func clip(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
