// Package rollbackflow is the room where a request to roll an environment
// back becomes a rollback pull request and a rollback release record
// (DESIGN.md "Rollback is a release"). Every way to start one — POST
// /api/v1/rollbacks (and the CLI on it), `/ripcord rollback` in a pull
// request or issue comment, the Roll back button on a ripcord/release check
// run, the Roll back form of the releases page (Starter.Start), and a
// recovery decision for mode pull-request — goes through the same pure
// Decide and queues the same job, keyed by the rollback's release id. The
// ways a person asks (command, button, page) share one permission check
// (commands.rollback in .github/ripcord.yml, default write). In order:
//
//   - Decide picks the release running now (the newest record that left
//     opened), the target (eligibility.SelectTarget, or the release or digest
//     named with `to`), and derives the rollback release: a deterministic id,
//     kind rollback, rollback_of, the target's image and git revision, the
//     default branch's commit as config revision. A named target that is not
//     eligible is allowed — it is an ordinary promotion and gets every gate —
//     and the pull request says so.
//   - The job (PullRequestArgs) opens the pull request in the environment's
//     GitOps repository with rollbackpr.Open through the installation client
//     of that repository, then opens the release record with the pull
//     request in it. A retried job finds the same branch, pull request and
//     record; a second request for the same rollback is a duplicate job.
//     The job's base snapshot (the base branch's head, tree and release file)
//     comes from a rollbackpr.MemoryCache that the push handler keeps in step,
//     so a rollback pull request is six GitHub calls once the cache is warm.
//
// The reducer (records) does the rest when facts arrive: a rollback release
// that becomes healthy marks the release it names rolled-back and sends one
// service.rolledback CDEvent.
package rollbackflow
