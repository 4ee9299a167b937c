package eligibility

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/records"
)

var t0 = time.Date(2026, 10, 10, 9, 0, 0, 0, time.UTC)

func at(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }

func digest(name string) string {
	sum := sha256.Sum256([]byte(name))
	return "sha256:" + hex.EncodeToString(sum[:])
}

const repo = "ghcr.io/acme/checkout"

// rec is a checkout release in prod/prod-eu created at hour h, running the
// image named img, healthy unless told otherwise.
func rec(id string, h int, img string, opts ...func(*records.Record)) records.Record {
	r := records.Record{
		ReleaseID: id, App: "checkout", Environment: "prod", Cluster: "prod-eu", Kind: records.KindPromote,
		Image: repo + "@" + digest(img), Digest: digest(img), State: records.StateSuperseded,
		CreatedAt: at(h), UpdatedAt: at(h + 1),
	}
	healthy := at(h).Add(10 * time.Minute)
	r.HealthyAt = &healthy
	r.LastFactAt = &r.UpdatedAt // a release that ran was reported on
	for _, o := range opts {
		o(&r)
	}
	return r
}

// withdrawn is a release called off before it ran (records.Withdraw): its
// pull request was closed without merging, so it is aborted with no fact.
func withdrawn(r *records.Record) {
	r.HealthyAt, r.State, r.LastFactAt = nil, records.StateAborted, nil
}

func state(s records.State) func(*records.Record) { return func(r *records.Record) { r.State = s } }

// neverHealthy: a release that is in state s and never reached healthy.
// An opened one got no fact either: a fact moves a release out of opened.
func neverHealthy(s records.State) func(*records.Record) {
	return func(r *records.Record) {
		r.HealthyAt, r.State = nil, s
		if s == records.StateOpened {
			r.LastFactAt = nil
		}
	}
}

// failedUnrun is a release whose deployment failed before it changed the
// workload (records.FailUnrun): failed with no fact, so it never ran.
func failedUnrun(r *records.Record) {
	r.HealthyAt, r.State, r.LastFactAt = nil, records.StateFailed, nil
}
func cluster(c string) func(*records.Record) { return func(r *records.Record) { r.Cluster = c } }
func rollbackOf(id string) func(*records.Record) {
	return func(r *records.Record) {
		r.Kind, r.RollbackOf, r.RollbackReason = records.KindRollback, id, "canary errors"
	}
}
func tagged(ref string) func(*records.Record) {
	return func(r *records.Record) { r.Image = ref }
}

func query(img string) Query {
	return Query{App: "checkout", Environment: "prod", Cluster: "prod-eu", Image: img}
}

// six releases, newest first: R6 (current, healthy) … R1 (sixth-newest).
func six() []records.Record {
	return []records.Record{
		rec("R6", 60, "v6", state(records.StateHealthy)),
		rec("R5", 50, "v5"),
		rec("R4", 40, "v4", neverHealthy(records.StateAborted)),
		rec("R3", 30, "v3"),
		rec("R2", 20, "v2"),
		rec("R1", 10, "v1"),
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rs       []records.Record
		q        Query
		n        int
		eligible bool
		release  string // the evidence's release; "" for none
		position int
		reason   string // substring of the reason
	}{
		{"healthy then aborted is still eligible",
			[]records.Record{rec("R2", 20, "v2", state(records.StateAborted))}, query(digest("v2")), 0,
			true, "R2", 1, "now aborted"},
		{"superseded release that was healthy is eligible",
			six(), query(repo + "@" + digest("v3")), 0, true, "R3", 4, "the fourth-newest"},
		{"fifth-newest is eligible",
			six(), query(digest("v2")), 0, true, "R2", 5, "the fifth-newest"},
		{"sixth-newest is not eligible",
			six(), query(digest("v1")), 0, false, "R1", 6, "but that is the sixth-newest release of checkout in prod/prod-eu and only the newest 5 count"},
		{"a smaller window drops the fourth-newest",
			six(), query(digest("v3")), 3, false, "R3", 4, "only the newest 3 count"},
		{"zero window means five",
			six(), query(digest("v1")), 0, false, "R1", 6, "newest 5"},
		{"never healthy is not eligible",
			six(), query(digest("v4")), 0, false, "R4", 3, "never reached healthy (it is aborted)"},
		{"never healthy in a newer release, healthy in an older one: eligible by the older",
			append([]records.Record{rec("R7", 70, "v3", neverHealthy(records.StateFailed))}, six()[:4]...),
			query(digest("v3")), 0, true, "R3", 5, "in release R3"},
		{"healthy only in another cluster is not eligible",
			[]records.Record{rec("R6", 60, "v6", state(records.StateHealthy)), rec("U1", 10, "v1", cluster("prod-us"))},
			query(digest("v1")), 0, false, "U1", 0, "healthy in prod/prod-us (release U1), not in prod/prod-eu"},
		{"records of another cluster do not take places in the window",
			append([]records.Record{
				rec("U9", 90, "u9", cluster("prod-us")), rec("U8", 80, "u8", cluster("prod-us")), rec("U7", 70, "u7", cluster("prod-us")),
			}, six()...),
			query(digest("v2")), 0, true, "R2", 5, "the fifth-newest"},
		{"an opened record (its pull request not merged) takes no place in the window",
			append([]records.Record{
				rec("RB", 70, "v2", neverHealthy(records.StateOpened)), rec("P8", 80, "v8", neverHealthy(records.StateOpened)),
			}, six()...),
			query(digest("v2")), 0, true, "R2", 5, "the fifth-newest"},
		{"a withdrawn record (its pull request closed unmerged) takes no place in the window",
			append([]records.Record{rec("RB", 70, "v2", withdrawn), rec("P8", 80, "v8", withdrawn)}, six()...),
			query(digest("v2")), 0, true, "R2", 5, "the fifth-newest"},
		{"a release that failed before it ran (no fact) takes no place in the window",
			append([]records.Record{rec("F8", 80, "v8", failedUnrun), rec("F7", 70, "v7", failedUnrun)}, six()...),
			query(digest("v2")), 0, true, "R2", 5, "the fifth-newest"},
		{"a release that failed before it ran is not one that ran",
			[]records.Record{rec("F7", 70, "v7", failedUnrun), rec("R6", 60, "v6", state(records.StateHealthy))},
			query(digest("v7")), 0, false, "F7", 0, "is the image of release F7 of checkout in prod/prod-eu, which has not run (it is failed)"},
		{"an opened record alone is not a release that ran",
			[]records.Record{rec("R7", 70, "v7", neverHealthy(records.StateOpened)), rec("R6", 60, "v6", state(records.StateHealthy))},
			query(digest("v7")), 0, false, "R7", 0, "is the image of release R7 of checkout in prod/prod-eu, which has not run (it is opened)"},
		{"a rollback that reached healthy makes its image eligible, and is the evidence",
			[]records.Record{rec("R3", 30, "v1", state(records.StateHealthy), rollbackOf("R2")),
				rec("R2", 20, "v2", neverHealthy(records.StateRolledBack)), rec("R1", 10, "v1")},
			query(digest("v1")), 0, true, "R3", 1, "in release R3 (the newest release of checkout in prod/prod-eu, now healthy)"},
		{"a release rolled back after it was healthy stays eligible",
			[]records.Record{rec("R3", 30, "v1", state(records.StateHealthy), rollbackOf("R2")),
				rec("R2", 20, "v2", state(records.StateRolledBack))},
			query(digest("v2")), 0, true, "R2", 2, "now rolled-back"},
		{"a release rolled back before it was healthy is not eligible",
			[]records.Record{rec("R3", 30, "v1", state(records.StateHealthy), rollbackOf("R2")),
				rec("R2", 20, "v2", neverHealthy(records.StateRolledBack))},
			query(digest("v2")), 0, false, "R2", 2, "never reached healthy (it is rolled-back)"},
		{"records given oldest first are still counted newest first",
			reversed(six()), query(digest("v1")), 0, false, "R1", 6, "sixth-newest"},
		{"bare digest matches a record whose digest is only in its image",
			[]records.Record{rec("R2", 20, "v2", func(r *records.Record) { r.Digest = "" })}, query(digest("v2")), 0,
			true, "R2", 1, ""},
		{"same digest from another repository is the same content",
			six(), query("registry.local:5000/mirror/checkout@" + digest("v5")), 0, true, "R5", 2, ""},
		{"tag matches a record deployed by that exact tag, and says which digest to pin",
			[]records.Record{rec("R2", 20, "v2", tagged(repo+":v2"))}, query(repo + ":v2"), 0,
			true, "R2", 1, "pin that digest"},
		{"tag matches the tag of a tag@digest record",
			[]records.Record{rec("R2", 20, "v2", tagged(repo+":v2@"+digest("v2")))}, query(repo + ":v2"), 0,
			true, "R2", 1, "it ran as " + digest("v2")},
		{"bare version of a workflow deploy matches by equality, without a digest",
			[]records.Record{rec("R2", 20, "v2", tagged("v1a2b3c4-1760000000"), func(r *records.Record) { r.Digest = "" })},
			query("v1a2b3c4-1760000000"), 0, true, "R2", 1, "no digest was recorded"},
		{"tag cannot be compared with a digest-pinned record",
			six(), query(repo + ":v5"), 0, false, "", 0, "is not the image of any of the newest 5 releases of checkout in prod/prod-eu that ran; a tag is only compared"},
		{"same tag in another repository does not match",
			[]records.Record{rec("R2", 20, "v2", tagged(repo+":v2"))}, query("ghcr.io/acme/payments:v2"), 0,
			false, "", 0, "not the image"},
		{"no release recorded here",
			nil, query(digest("v1")), 0, false, "", 0, "no release of checkout in prod/prod-eu is recorded"},
		{"query without cluster", six(), Query{App: "checkout", Environment: "prod", Image: digest("v5")}, 0,
			false, "", 0, "cluster: is required"},
		{"query digest that is not a digest", six(), query(repo + "@sha256:abc"), 0,
			false, "", 0, "image: digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Check(tc.rs, tc.q, tc.n)
			if a.Eligible != tc.eligible {
				t.Fatalf("eligible = %v (%s), want %v", a.Eligible, a.Reason, tc.eligible)
			}
			if !strings.Contains(a.Reason, tc.reason) {
				t.Errorf("reason %q, want it to contain %q", a.Reason, tc.reason)
			}
			switch {
			case tc.release == "" && a.Evidence != nil:
				t.Errorf("evidence = %+v, want none", a.Evidence)
			case tc.release != "" && a.Evidence == nil:
				t.Errorf("no evidence, want release %s", tc.release)
			case tc.release != "" && (a.Evidence.ReleaseID != tc.release || a.Evidence.Position != tc.position):
				t.Errorf("evidence = %s at position %d, want %s at %d", a.Evidence.ReleaseID, a.Evidence.Position, tc.release, tc.position)
			}
		})
	}
}

func TestCheckEvidenceSaysWhichRecordAndWhen(t *testing.T) {
	a := Check(six(), query(digest("v5")), 5)
	e := a.Evidence
	if e == nil || e.HealthyAt == nil || !e.HealthyAt.Equal(at(50).Add(10*time.Minute)) || e.State != records.StateSuperseded ||
		e.Digest != digest("v5") || !e.CreatedAt.Equal(at(50)) || e.Image != repo+"@"+digest("v5") {
		t.Fatalf("evidence = %+v, want R5's healthy_at, state, image, digest and created_at", e)
	}
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"eligible":true`, `"reason":`, `"release_id":"R5"`, `"healthy_at":`, `"state":"superseded"`,
		`"image":`, `"digest":`, `"created_at":`, `"position":2`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON %s lacks %s", b, key)
		}
	}
}

func reversed(rs []records.Record) []records.Record {
	out := slices.Clone(rs)
	slices.Reverse(out)
	return out
}

func TestOrdinal(t *testing.T) {
	for pos, want := range map[int]string{1: "the newest", 2: "the second-newest", 6: "the sixth-newest", 10: "the tenth-newest",
		11: "the 11th-newest", 12: "the 12th-newest", 13: "the 13th-newest", 21: "the 21st-newest", 22: "the 22nd-newest", 103: "the 103rd-newest"} {
		if got := ordinal(pos); got != want {
			t.Errorf("ordinal(%d) = %q, want %q", pos, got, want)
		}
	}
}
