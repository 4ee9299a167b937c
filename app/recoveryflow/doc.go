// Package recoveryflow is the room where a failed deploy workflow run becomes
// a recovery episode: it reacts to workflow_run completed for the workflows
// .github/ripcord.yml names, loads what recovery.Decide needs (the failure
// type from the run's task facts or its failed jobs, the failed, previous and
// live releases from the records), stores the decision in the episodes table
// with its audit events, and queues the effects as idempotent jobs: a re-run
// of the failed jobs at now + backoff, a rollback through the environment's
// RollbackExecutor, a GitHub issue for a human, and the ripcord/recovery
// check run that shows every step. A later successful attempt closes the
// episode; a rollback ends it when its workflow run ends or, for modes
// pull-request and kubernetes, when its rollback release settles
// (outcome.go). It also runs the /ripcord retry command.
//
// How the versions are derived (DESIGN.md "Recovery"):
//
//   - the failed release is the one named by the task fact the bundled action
//     posted in the failed run (source task, same repository and
//     workflow_run_id; a failed fact of the same attempt first); its record's
//     image gives the failed version: the tag, or the whole string for a bare
//     version, or nothing when the image is pinned by digest only;
//   - the live release is what the cluster runs (seed 000 reads the
//     Deployment): the newest record of the failed release's app, environment
//     and cluster that a cluster source (the agent) reports on a workload now,
//     running the record's image. So a release that failed before any pod ran
//     it is not taken for the live one, and the failure is skipped. When no
//     cluster source reports any of them (workflow deploys without the agent),
//     it is the newest record that ran (the environment received nothing
//     after it); no record means the live version cannot be read;
//   - the previous release is eligibility.SelectTarget over the newest
//     eligibility.window records there, relative to the failed release (or,
//     when the run posted no task fact, to the current record).
//
// Without a task fact the app and environment come from the workflow
// mapping alone, the failed version is unknown, and no rollback can happen.
package recoveryflow
