// Package cdevents is where ripcord's cdevent effects leave the building:
// it turns an effect the reducer produced (a release became healthy, or a
// rollback did) into a CDEvent of spec 0.5.1 wrapped in a CloudEvent, and
// posts it to a CloudEvents HTTP sink.
//
// Building is pure (time is an argument) and deterministic: the event id is
// derived from the effect's idempotency key and the timestamp from the
// record's healthy_at, so a delivery retried by the job queue carries the
// same id and time and receivers can drop the repeat. Sending is the thin
// shell; it classifies failures so the job retries an outage but reports a
// sink that refuses the event instead of retrying it forever.
package cdevents
