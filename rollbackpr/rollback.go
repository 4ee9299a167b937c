package rollbackpr

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"
)

// Rollback is a rollback release as the pull request presents it: the new release, the
// release it replaces, the target it brings back, why, and the eligibility evidence.
// Field names follow the ReleaseRecord's (DESIGN.md).
type Rollback struct {
	App         string `json:"app"`
	Environment string `json:"environment"`
	Cluster     string `json:"cluster,omitempty"`
	// ReleaseID is the rollback release's own new id; RollbackOf is the one it replaces.
	ReleaseID  string `json:"release_id"`
	RollbackOf string `json:"rollback_of"`
	Reason     string `json:"rollback_reason"`
	// Image, Digest and GitRevision are the target's: what the rollback brings back.
	Image       string `json:"image"`
	Digest      string `json:"digest"`
	GitRevision string `json:"git_revision"`
	// ConfigRevision is where configuration is read from (the default branch), which is
	// not the target's own commit.
	ConfigRevision string      `json:"config_revision,omitempty"`
	Replaced       Replaced    `json:"replaced"`
	Eligibility    Eligibility `json:"eligibility"`
	Links          []Link      `json:"links,omitempty"`
}

// Replaced is what the release being rolled back runs.
type Replaced struct {
	Image       string `json:"image,omitempty"`
	Digest      string `json:"digest,omitempty"`
	GitRevision string `json:"git_revision,omitempty"`
}

// Eligibility is the eligibility check's answer for the target, shown to reviewers. Gates
// never read it from the pull request; they compute it again from release records.
type Eligibility struct {
	Eligible bool   `json:"eligible"`
	Reason   string `json:"reason"`
	// ReleaseID and HealthyAt name the record that proves eligibility; Window is how many
	// of the newest releases were looked at.
	ReleaseID string    `json:"release_id,omitempty"`
	HealthyAt time.Time `json:"healthy_at,omitempty"`
	Window    int       `json:"window,omitempty"`
}

// Link is a titled URL listed at the end of the pull request body.
type Link struct {
	Text string `json:"text"`
	URL  string `json:"url"`
}

var revisionPattern = regexp.MustCompile(`^[0-9a-fA-F]{8,64}$`)

// Validate names the first missing or malformed field a rollback pull request needs.
func (r Rollback) Validate() error {
	for _, f := range []struct{ name, value string }{
		{"app", r.App}, {"environment", r.Environment}, {"release_id", r.ReleaseID},
		{"rollback_of", r.RollbackOf}, {"git_revision", r.GitRevision},
	} {
		if strings.TrimSpace(f.value) == "" {
			return fmt.Errorf("rollback %s is empty", f.name)
		}
	}
	if !revisionPattern.MatchString(r.GitRevision) {
		return fmt.Errorf("rollback git_revision %q is not a commit sha (8 to 64 hex digits)", r.GitRevision)
	}
	if r.ReleaseID == r.RollbackOf {
		return fmt.Errorf("rollback release_id %q equals rollback_of: a rollback is a new release with its own id", r.ReleaseID)
	}
	return nil
}

// oneLine folds every run of whitespace and control characters (newlines included) into
// one space, so a value cannot break a trailer, a title or a markdown line.
func oneLine(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}
