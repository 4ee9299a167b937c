// Package rollbackpr is the room where a rollback becomes a pull request in the GitOps
// repository: the release-file edit that changes only the named values and keeps every
// comment and quote, the branch name, title, body and commit message with the git trailers
// that say "this is a rollback of that release, because", and the idempotent flow that
// opens (or finds and updates) the branch and the pull request on GitHub.
//
// The edit, the names and the messages are pure functions. Open is the shell: it talks to
// GitHub only through the small GitHub interface declared here, which NewGitHub implements
// with go-github and rollbackprtest implements in memory for tests. It commits with the
// Git Data API on a base snapshot that a BaseCache (MemoryCache, kept in step by push
// webhooks through Pushed) usually already holds, so a rollback pull request is six calls.
package rollbackpr
