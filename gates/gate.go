package gates

import (
	"context"

	"github.com/ripcord/ripcord/eligibility"
)

// Class is what a gate protects; it decides how a verdict blocks.
type Class string

// Classes.
const (
	Integrity Class = "integrity"
	Content   Class = "content"
	Process   Class = "process"
)

// Gate names, as the check runs show them after "ripcord/".
const (
	NameProvenance       = "provenance"
	NameValues           = "values"
	NameCommitSigning    = "commit-signing"
	NameSAST             = "sast"
	NameSBOM             = "sbom"
	NameImageScan        = "image-scan"
	NameITSM             = "itsm"
	NameQA               = "qa"
	NamePolicyValidation = "policy-validation"
)

// CheckPrefix starts every gate's check-run name.
const CheckPrefix = "ripcord/"

// Gate judges one aspect of a release. Evaluate never returns an error: a
// gate that cannot decide answers Error with the reason.
type Gate interface {
	Name() string
	Class() Class
	Evaluate(ctx context.Context, s Subject) Verdict
}

// Slow is implemented by gates that reach a registry or another service
// and may take long enough to report in_progress first.
type Slow interface{ Slow() bool }

// IsSlow reports whether g declares itself slow.
func IsSlow(g Gate) bool {
	s, ok := g.(Slow)
	return ok && s.Slow()
}

// CheckName is the check-run name of a gate: "ripcord/<gate>".
func CheckName(gate string) string { return CheckPrefix + gate }

// Subject is the release a pull request promotes, as read from the release
// file at the PR's head, plus the PR facts process gates look at and the
// eligibility computed from release records.
type Subject struct {
	Repository  string `json:"repository"` // owner/name of the PR
	App         string `json:"app"`
	Environment string `json:"environment"`
	Cluster     string `json:"cluster"`
	Image       string `json:"image"`
	Digest      string `json:"digest"`
	GitRevision string `json:"git_revision"`
	// GitRevisionSource says where GitRevision came from, for the summary;
	// GitRevisionUnknown why it is empty, for the gates that need it.
	GitRevisionSource  string `json:"git_revision_source,omitempty"`
	GitRevisionUnknown string `json:"git_revision_unknown,omitempty"`
	// SourceRepository is the repository GitRevision belongs to: the
	// repository of the release record that ran the digest, which need not
	// be the GitOps repository the PR changes. Empty: unknown.
	SourceRepository string `json:"source_repository,omitempty"`
	// Owner is the repository App's Environment belongs to (the one of
	// its first release, records.Store.Owner): only its release records,
	// and those registered without a repository (the api token, a
	// cluster), say which commit a digest was built from. Empty: no
	// record names a repository yet.
	Owner string `json:"owner,omitempty"`

	HeadSHA     string   `json:"head_sha"`
	PullRequest int      `json:"pull_request"`
	Title       string   `json:"title,omitempty"`
	HeadBranch  string   `json:"head_branch,omitempty"`
	Body        string   `json:"body,omitempty"`
	Labels      []string `json:"labels,omitempty"`

	// ReleaseFile is the path and content of the release file at the head.
	ReleaseFile        string `json:"release_file"`
	ReleaseFileContent []byte `json:"-"`

	// Eligibility is eligibility.Check's answer for Image in this app,
	// environment and cluster. Title, HeadBranch and trailers never enter it.
	Eligibility eligibility.Answer `json:"eligibility"`
}

// CodeRepository is where GitRevision's commit lives: SourceRepository
// when a record names it, else the PR's repository (a monorepo).
func (s Subject) CodeRepository() string {
	if s.SourceRepository != "" {
		return s.SourceRepository
	}
	return s.Repository
}

// revisionUnknown is the verdict of a gate that needs GitRevision when it
// is unknown, saying why.
func (s Subject) revisionUnknown() Verdict {
	return Errored("the release's git revision is unknown: " + orDefault(s.GitRevisionUnknown, "no release record names this digest"))
}

// EligibleRollback reports whether content gates are advisory for s.
func (s Subject) EligibleRollback() bool { return s.Eligibility.Eligible }

// ImageRef is the image pinned by digest, "repo@sha256:…", when both are known.
func (s Subject) ImageRef() string {
	repo := s.Image
	if i := indexDigest(repo); i >= 0 {
		repo = repo[:i]
	}
	if s.Digest == "" {
		return s.Image
	}
	return repo + "@" + s.Digest
}

func indexDigest(image string) int {
	for i := 0; i+1 < len(image); i++ {
		if image[i] == '@' {
			return i
		}
	}
	return -1
}
