// Package deployments is the room where ripcord mirrors its release records
// into GitHub Deployments, so that a repository's Environments view tells
// the same story as the records: each release gets one GitHub deployment for
// its environment, and every change of the record's state that changes what
// GitHub should show writes exactly one deployment status (in_progress,
// success, failure, inactive), linking to the release's page.
//
// The decisions (which status a state means, what the deployment says, why
// a release is skipped) are pure functions in status.go. The worker is the
// shell: it holds a per-release lease so two jobs never write for one
// release at once, and notes each GitHub write before sending it, so a retry
// after a lost answer looks the write up instead of repeating it.
package deployments
