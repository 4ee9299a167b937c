package records

import (
	"reflect"
	"strings"
	"testing"
)

// DESIGN.md, Facts: an observed release the records cannot explain is
// drift: alert, never guess. `kubectl argo rollouts undo` (or `kubectl
// rollout undo`) puts the previous pod template back but keeps the
// release-id annotation on the workload's own metadata, so the id alone
// would make the record healthy while the old image runs. The fact's images
// must contain the record's: by digest when both have one, else by
// reference.
func TestFactNotRunningTheRecordsImageIsDriftNeverHealthy(t *testing.T) {
	t.Parallel()
	const repo = "ghcr.io/acme/checkout"
	d1, d2 := digestOf("one"), digestOf("two")
	withImage := func(img, digest string) func(*Record) {
		return func(r *Record) { r.Image, r.Digest = img, digest }
	}
	images := func(imgs ...string) func(*Fact) { return func(f *Fact) { f.Images = imgs } }
	for _, tc := range []struct {
		name  string
		rec   Record
		fact  Fact
		prev  *Observation
		drift bool // else applied
	}{
		{name: "undo keeps the release id but runs the previous image: drift, not healthy",
			rec:  record("R2", StateProgressing, 10, lastFact(11)),
			fact: fact("R2", PhaseHealthy, 20, gen(4), image(imageOf("R1"))), prev: seen("R2", PhaseProgressing, 11), drift: true},
		{name: "the first fact of a release already runs another image: drift",
			rec:  record("R2", StateOpened, 10),
			fact: fact("R2", PhaseProgressing, 11, image(imageOf("R1"))), drift: true},
		{name: "by digest when both have one: another tag of the same digest is the release",
			rec:  record("R2", StateProgressing, 10, withImage(repo+":v2", d1)),
			fact: fact("R2", PhaseHealthy, 20, images(repo+":latest@"+d1))},
		{name: "by digest when both have one: the same tag with another digest is drift",
			rec:  record("R2", StateProgressing, 10, withImage(repo+":v2", d1)),
			fact: fact("R2", PhaseHealthy, 20, images(repo+":v2@"+d2)), drift: true},
		{name: "by reference when one has no digest: the same reference is the release",
			rec:  record("R2", StateProgressing, 10, withImage(repo+":v2", "")),
			fact: fact("R2", PhaseHealthy, 20, images(repo+":v2@"+d2))},
		{name: "by reference when one has no digest: another tag is drift",
			rec:  record("R2", StateProgressing, 10, withImage(repo+":v2", d1)),
			fact: fact("R2", PhaseHealthy, 20, images(repo+":v1")), drift: true},
		{name: "by reference: Docker Hub's short name is the same reference",
			rec:  record("R2", StateProgressing, 10, withImage("docker.io/library/nginx:1.27", "")),
			fact: fact("R2", PhaseHealthy, 20, images("nginx:1.27"))},
		{name: "by reference: a bare version (workflow deploys) is the image's tag",
			rec:  record("R2", StateProgressing, 10, withImage("v1a2b3c4-1760000000", "")),
			fact: fact("R2", PhaseHealthy, 20, images(repo+":v1a2b3c4-1760000000"))},
		{name: "undecidable: a bare version against an image pinned by digest only is the release",
			rec:  record("R2", StateProgressing, 10, withImage("v1a2b3c4-1760000000", "")),
			fact: fact("R2", PhaseHealthy, 20, images(repo+"@"+d1))},
		{name: "undecidable: a tag against an image pinned by digest only is the release",
			rec:  record("R2", StateProgressing, 10, withImage(repo+":v2", "")),
			fact: fact("R2", PhaseHealthy, 20, images(repo+"@"+d1))},
		{name: "undecidable: a digest-only record against a tag without digest is the release",
			rec:  record("R2", StateProgressing, 10, withImage(repo+"@"+d1, d1)),
			fact: fact("R2", PhaseHealthy, 20, images(repo+":v2"))},
		{name: "undecidable beside a sidecar that differs: the release",
			rec:  record("R2", StateProgressing, 10, withImage(repo+":v2", "")),
			fact: fact("R2", PhaseHealthy, 20, images("ghcr.io/acme/envoy:1.31", repo+"@"+d1))},
		{name: "contain, not equal: the record's image beside a sidecar is the release",
			rec:  record("R2", StateProgressing, 10),
			fact: fact("R2", PhaseHealthy, 20, images("ghcr.io/acme/envoy:1.31", imageOf("R2")))},
		{name: "a fact that reports no images cannot contradict the record",
			rec:  record("R2", StateProgressing, 10),
			fact: fact("R2", PhaseHealthy, 20, images())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tc.rec
			res := Reduce(Input{Fact: tc.fact, Record: &rec, Previous: tc.prev, Now: tc.fact.ObservedAt})
			if !tc.drift {
				if res.Outcome != OutcomeApplied || recordOf(t, res, "R2").State != StateHealthy && tc.fact.Phase == PhaseHealthy {
					t.Fatalf("outcome %s (%s), want applied", res.Outcome, res.Reason)
				}
				return
			}
			assertDrift(t, res, "R2", "does not run")
			if !strings.Contains(res.Reason, rec.Image) {
				t.Errorf("reason %q should name the record's image %s", res.Reason, rec.Image)
			}
		})
	}
}

// Once the wrong image was reported, the same workload's later phases
// (the undone canary going Healthy, a resync) are not new drift: one alert
// per arrival, as for any drifted workload.
func TestImageDriftAlertsOncePerArrival(t *testing.T) {
	t.Parallel()
	r2 := record("R2", StateProgressing, 10, lastFact(11))
	prev := observationOf(fact("R2", PhaseProgressing, 20, gen(4), image(imageOf("R1"))))
	res := Reduce(Input{Fact: fact("R2", PhaseHealthy, 22, gen(4), image(imageOf("R1"))), Record: &r2, Previous: prev, Now: at(22)})
	if res.Outcome != OutcomeIgnored || len(res.Effects) != 0 || len(res.Records) != 0 {
		t.Fatalf("outcome %s effects %v records %v, want ignored: no second alert, no healthy", res.Outcome, effectTypes(res), releaseIDs(res.Records))
	}
}

// The workload's observation follows what it reports even while its
// images drift under the release id: an undone canary that goes Healthy is
// Healthy for the server (Running, Observed), though no record moves and
// no second alert is raised.
func TestAnImageDriftIgnoredStillMovesTheWorkloadsObservation(t *testing.T) {
	t.Parallel()
	r2 := record("R2", StateProgressing, 10, lastFact(11))
	prev := observationOf(fact("R2", PhaseProgressing, 20, gen(4), image(imageOf("R1"))))
	healthy := fact("R2", PhaseHealthy, 22, gen(4), image(imageOf("R1")))
	res := Reduce(Input{Fact: healthy, Record: &r2, Previous: prev, Now: at(22)})
	if res.Outcome != OutcomeIgnored {
		t.Fatalf("outcome %s (%s), want ignored", res.Outcome, res.Reason)
	}
	if want := observationOf(healthy); res.Observation == nil || !reflect.DeepEqual(*res.Observation, *want) {
		t.Errorf("observation %+v, want the workload as reported: %+v", res.Observation, want)
	}
}
