package gates

import (
	"context"
	"fmt"
	"strings"
)

// CommitVerifier is the one GitHub call commit-signing makes: GET
// /repos/{owner}/{repo}/commits/{sha}, commit.verification.
type CommitVerifier interface {
	CommitVerification(ctx context.Context, repository, sha string) (verified bool, reason string, err error)
}

// CommitSigning requires the release's git revision to be a commit GitHub
// verified (a valid GPG, SSH or S/MIME signature).
type CommitSigning struct{ GitHub CommitVerifier }

// Name, Class and Evaluate implement Gate.
func (CommitSigning) Name() string { return NameCommitSigning }
func (CommitSigning) Class() Class { return Integrity }
func (g CommitSigning) Evaluate(ctx context.Context, s Subject) Verdict {
	if s.GitRevision == "" {
		return s.revisionUnknown()
	}
	ok, reason, err := g.GitHub.CommitVerification(ctx, s.CodeRepository(), s.GitRevision)
	if err != nil {
		return Errored(fmt.Sprintf("could not read commit %s from GitHub: %v", s.GitRevision, err))
	}
	if ok {
		return Passed(fmt.Sprintf("commit %s is verified by GitHub (%s)", short(s.GitRevision), orDefault(reason, "valid")))
	}
	return Failed(fmt.Sprintf("commit %s is not verified by GitHub: %s", short(s.GitRevision), orDefault(reason, "no reason given")))
}

func short(sha string) string {
	if len(sha) > 12 && !strings.ContainsAny(sha, "/:") {
		return sha[:12]
	}
	return sha
}
