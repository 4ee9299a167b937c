// Package gates is the room where a release pull request is judged before it
// merges: each configured gate (provenance, values, commit-signing, sast,
// sbom, image-scan, itsm, qa, policy-validation) looks at the release the PR
// promotes and answers pass, fail or error, and the class policy turns that
// answer into a check-run conclusion.
//
// Gates are split by what they protect (seed 003, decision 8):
//
//   - integrity gates (provenance, values, commit-signing) block, always;
//   - content gates (sast, sbom, image-scan) block an ordinary promotion but
//     are advisory on an eligible rollback: they run, report, and pass;
//   - process gates (itsm, qa, policy-validation) are unchanged on rollbacks.
//
// Whether a PR is an eligible rollback is computed from release records
// (eligibility.Check), never read from the PR's branch, title or trailers.
// A gate that cannot decide fails closed and says why.
//
// The package is pure except for the gates that verify: they reach GitHub,
// a registry or a policy service through interfaces declared here.
package gates
