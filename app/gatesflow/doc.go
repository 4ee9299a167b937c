// Package gatesflow wires the gates into the server: a pull_request
// (opened, synchronize, reopened) that changes an environment's release
// file, or comes from a release branch, and a check_run rerequested on a
// ripcord/<gate> run queue an evaluation job; the job reads the release the
// PR promotes at its head, computes eligibility from release records,
// evaluates the configured gates in parallel (package gates) and queues one
// check-run write job per gate on the head commit. An evaluation whose job
// fails for good queues a give-up job, which completes the runs it showed
// in progress as failures (gave_up.go); a verdict whose job fails for good
// completes its run as a failure that says so (not_written.go). Both jobs
// keep one attempt more than their work uses, which only does that, for a
// last attempt lost with its process (errLostAttempt); so does the
// give-up's job, whose kept attempt does the lost one's work again.
//
// The registry gates (provenance, sbom, image-scan) share one verifier per
// server (package gates/attest), whose cache outlives a job; their trust
// material (gates.provenance keys and trusted root) is read from the
// default branch, like the config and the values schema, so a PR cannot
// bring the key that judges it.
package gatesflow
