package gates

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ripcord/ripcord/eligibility"
	"github.com/ripcord/ripcord/records"
)

// Assess completes s from the release records of its app, environment and
// cluster (newest first): the eligibility answer that decides whether
// content gates are advisory (only for a release file that pins a digest),
// and, when the release file does not say, the
// git revision the digest was built from. Nothing here reads the PR's
// title, branch or trailers.
//
// elsewhere are the app's records of its other environments and clusters
// (GET /api/v1/eligibility reads the app's newest records.DefaultListLimit):
// they never make a digest eligible, which stays per app, environment and
// cluster, but a "no" says where else the digest ran healthy, as the API's
// answer does, so the check run and the API give the same reason. Nor do
// they ever name the git revision.
//
// The revision is taken only from a record of s.Owner's, or one with no
// repository (the api token, a cluster): any record with the digest may
// have been registered, never run, with whatever revision its caller
// chose, and another repository's record (two repositories racing for the
// first release, a record from before ownership, a rollback another
// repository's config started) would make commit-signing and sast judge a
// commit of that repository's choosing.
func Assess(rs, elsewhere []records.Record, s Subject, window int) Subject {
	if c := s.DigestConflict(); c != "" {
		// Neither digest is the release's: no record may vouch for it.
		s.Eligibility = eligibility.Answer{Reason: c}
		if s.GitRevision == "" {
			s.GitRevisionUnknown = c
		}
		return s
	}
	q := eligibility.Query{App: s.App, Environment: s.Environment, Cluster: s.Cluster, Image: s.ImageRef()}
	s.Eligibility = eligibility.Check(rs, q, window)
	if !s.Eligibility.Eligible {
		var others []records.Record
		for _, r := range elsewhere {
			if r.App == s.App && (r.Environment != s.Environment || r.Cluster != s.Cluster) {
				others = append(others, r)
			}
		}
		if len(others) > 0 {
			s.Eligibility = eligibility.Check(append(slices.Clone(rs), others...), q, window)
		}
	}
	if s.Eligibility.Eligible && s.Digest == "" {
		// Eligibility rests on the digest that ran healthy (DESIGN.md): a tag
		// may point at other content by now, which no content gate can even
		// look at without a digest.
		s.Eligibility.Eligible = false
		s.Eligibility.Reason += "; but the release file pins no digest, so it is judged as an ordinary promotion"
	}
	if s.GitRevision == "" && s.Digest != "" {
		for _, r := range rs {
			if r.ResolvedDigest() == s.Digest && r.GitRevision != "" && (r.Repository == "" || strings.EqualFold(r.Repository, s.Owner)) {
				s.GitRevision = r.GitRevision
				s.GitRevisionSource = "from release " + r.ReleaseID + ", which ran this digest"
				if !r.Ran() {
					s.GitRevisionSource = "from release " + r.ReleaseID + ", registered with this digest; it has not run"
				}
				s.SourceRepository = r.Repository
				break
			}
		}
	}
	if s.GitRevision == "" {
		s.GitRevisionUnknown = noRevision(rs, s)
	}
	return s
}

// DigestConflict says why the release file pins no one digest when its
// image carries a digest ("repo@sha256:…") and its digest field another:
// which of the two runs depends on how the file is deployed, so the gates
// must judge neither (a PR could otherwise pin an eligible, signed digest
// in one field and run the other). "" when there is no conflict.
func (s Subject) DigestConflict() string {
	d := records.ParseImage(s.Image).Digest
	if d == "" || s.Digest == "" || strings.EqualFold(d, s.Digest) {
		return ""
	}
	return fmt.Sprintf("the release file pins two digests, %s in its image and %s in its digest field: "+
		"which one runs depends on how the file is deployed, so neither is judged; pin one", shortDigest(d), shortDigest(s.Digest))
}

// noRevision says why no record Assess trusts gives the commit s's digest
// was built from: the check runs of the gates that need it say so, and
// must not blame a missing record for a tag-only release file or for a
// record of another repository.
func noRevision(rs []records.Record, s Subject) string {
	if s.Digest == "" {
		return "the release file pins no digest, so no release record can say which commit the image was built from"
	}
	var untrusted, bare *records.Record
	for i, r := range rs {
		switch {
		case r.ResolvedDigest() != s.Digest:
		case r.GitRevision == "":
			if bare == nil {
				bare = &rs[i]
			}
		case untrusted == nil:
			untrusted = &rs[i] // Assess took none with a revision: another repository's
		}
	}
	d := shortDigest(s.Digest)
	switch {
	case untrusted != nil:
		owner := "no repository yet (no release record of it names one)"
		if s.Owner != "" {
			owner = s.Owner + " (the repository of its first release)"
		}
		return fmt.Sprintf("only release %s of %s names digest %s with a git revision, and %s in %s belongs to %s: "+
			"another repository's record does not say which commit it was built from",
			untrusted.ReleaseID, untrusted.Repository, d, s.App, s.Environment, owner)
	case bare != nil:
		return fmt.Sprintf("release %s names digest %s but no git revision", bare.ReleaseID, d)
	}
	return fmt.Sprintf("no release record of %s in %s names digest %s", s.App, s.Environment, d)
}

// shortDigest is "sha256:" and the first 12 hex digits of a digest.
func shortDigest(d string) string {
	if i := strings.IndexByte(d, ':'); i >= 0 && len(d) > i+13 {
		return d[:i+13] + "…"
	}
	return d
}
