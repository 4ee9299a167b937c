// Package commands is the room where `/ripcord …` comments on pull requests
// become work: a pure parser that answers command, reply or ignore (with a
// did-you-mean for typos), a permission check of its own built on GitHub's
// collaborator permission API, and the issue_comment handler that
// acknowledges a command with an 👀 reaction at once, refuses with a reply
// that says why, and hands an allowed command to the capability that runs it
// (a Runner), once per comment (once.go). Replies and reactions are
// idempotent jobs.
package commands
