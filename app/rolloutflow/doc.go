// Package rolloutflow is where a release's rollout in waves (seed 001) is
// carried out on GitHub: it starts one rollout per release whose environment
// has `rollout:`, dispatches the deploy workflow once per batch on the
// runners of the batch's region, follows the runs through workflow_run
// events, bakes each stage with health readings (probes from the region's
// runners through a probe workflow, probes*.go), pauses for approvals and
// freeze windows, and applies on_failure. Its state machine (machine*.go) is
// pure; the River tick job (tick.go) is the shell that does the I/O, and
// every transition is stored in the same transaction that queues the next
// tick, so a restart resumes where the rollout stood; a batch whose dispatch
// was cut short by a crash gets its run back by name (adopt.go).
package rolloutflow
