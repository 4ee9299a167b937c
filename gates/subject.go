package gates

import (
	"github.com/ripcord/ripcord/eligibility"
	"github.com/ripcord/ripcord/records"
)

// Assess completes s from the release records of its app, environment and
// cluster (newest first): the eligibility answer that decides whether
// content gates are advisory (only for a release file that pins a digest),
// and, when the release file does not say, the
// git revision the digest was built from. Nothing here reads the PR's
// title, branch or trailers.
func Assess(rs []records.Record, s Subject, window int) Subject {
	q := eligibility.Query{App: s.App, Environment: s.Environment, Cluster: s.Cluster, Image: s.ImageRef()}
	s.Eligibility = eligibility.Check(rs, q, window)
	if s.Eligibility.Eligible && s.Digest == "" {
		// Eligibility rests on the digest that ran healthy (DESIGN.md): a tag
		// may point at other content by now, which no content gate can even
		// look at without a digest.
		s.Eligibility.Eligible = false
		s.Eligibility.Reason += "; but the release file pins no digest, so it is judged as an ordinary promotion"
	}
	if s.GitRevision == "" && s.Digest != "" {
		for _, r := range rs {
			if r.ResolvedDigest() == s.Digest && r.GitRevision != "" {
				s.GitRevision = r.GitRevision
				s.GitRevisionSource = "from release " + r.ReleaseID + ", which ran this digest"
				s.SourceRepository = r.Repository
				break
			}
		}
	}
	return s
}
