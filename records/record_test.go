package records

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseImage(t *testing.T) {
	t.Parallel()
	d := digestOf("x")
	for _, tc := range []struct {
		name, ref string
		want      ImageRef
	}{
		{"bare digest", d, ImageRef{Digest: d}},
		{"repository pinned by digest", "ghcr.io/acme/checkout@" + d, ImageRef{Repository: "ghcr.io/acme/checkout", Digest: d}},
		{"tag and digest", "ghcr.io/acme/checkout:v1.4.0@" + d, ImageRef{Repository: "ghcr.io/acme/checkout", Tag: "v1.4.0", Digest: d}},
		{"tag", "ghcr.io/acme/checkout:v1.4.0", ImageRef{Repository: "ghcr.io/acme/checkout", Tag: "v1.4.0"}},
		{"registry port is not a tag", "registry.local:5000/checkout", ImageRef{Repository: "registry.local:5000/checkout"}},
		{"registry port and tag", "registry.local:5000/checkout:v2", ImageRef{Repository: "registry.local:5000/checkout", Tag: "v2"}},
		{"bare version of a workflow deploy", "v1a2b3c4-1760000000", ImageRef{Repository: "v1a2b3c4-1760000000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseImage(tc.ref); got != tc.want {
				t.Errorf("ParseImage(%q) = %+v, want %+v", tc.ref, got, tc.want)
			}
		})
	}
}

func TestRecordValidate(t *testing.T) {
	t.Parallel()
	valid := record("R1", "", 0)
	for _, tc := range []struct {
		name   string
		mod    func(*Record)
		fields []string
	}{
		{"valid promote", func(*Record) {}, nil},
		{"valid rollback", rollbackOf("R0"), nil},
		{"missing identity", func(r *Record) { r.ReleaseID, r.App, r.Environment, r.Image = "", "", " ", "" },
			[]string{"release_id", "app", "environment", "image"}},
		{"unknown kind", func(r *Record) { r.Kind = "revert" }, []string{"kind"}},
		{"rollback without target or reason", func(r *Record) { r.Kind = KindRollback }, []string{"rollback_of", "rollback_reason"}},
		{"rollback of itself", func(r *Record) { rollbackOf("R1")(r) }, []string{"rollback_of"}},
		{"promote naming a rollback target", func(r *Record) { r.RollbackOf = "R0" }, []string{"rollback_of"}},
		{"digest not a digest", func(r *Record) { r.Digest = "latest" }, []string{"digest"}},
		{"digest contradicts the image", func(r *Record) { r.Digest = digestOf("other") }, []string{"digest"}},
		{"state in another spelling", func(r *Record) { r.State = "rolled_back" }, []string{"state"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := valid
			tc.mod(&r)
			err := r.Validate()
			if len(tc.fields) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want valid", err)
				}
				return
			}
			for _, f := range tc.fields {
				if err == nil || !namesField(err, f) {
					t.Errorf("Validate() = %v, want a *FieldError for %q", err, f)
				}
			}
		})
	}
}

func TestOpenRecordStartsOpenedAndWritesAnAuditEvent(t *testing.T) {
	t.Parallel()
	in := record("R2", "", 0, rollbackOf("R1"))
	in.CreatedAt, in.UpdatedAt = at(-100), at(-100)
	rec, ev, err := OpenRecord(in, at(5))
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != StateOpened || !rec.CreatedAt.Equal(at(5)) || !rec.UpdatedAt.Equal(at(5)) {
		t.Errorf("record = %s created %s updated %s, want opened at minute 5", rec.State, rec.CreatedAt, rec.UpdatedAt)
	}
	if rec.Digest != digestOf("R2") {
		t.Errorf("digest = %q, want the one pinned in the image", rec.Digest)
	}
	if ev.Type != AuditReleaseOpened || ev.ReleaseID != "R2" || ev.Data["rollback_of"] != "R1" {
		t.Errorf("audit event = %+v, want release_opened for R2 naming rollback_of R1", ev)
	}
}

func TestOpenRecordRefusesFactOwnedFields(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, field string
		mod         func(*Record)
	}{
		{"already healthy", "healthy_at", healthyAt(1)},
		{"claims a last fact", "last_fact_at", lastFact(1)},
		{"claims rolled back", "rolled_back_by", func(r *Record) { r.RolledBackBy = "R9" }},
		{"claims a state", "state", func(r *Record) { r.State = StateHealthy }},
		{"invalid kind", "kind", func(r *Record) { r.Kind = "" }},
	} {
		r := record("R1", "", 0)
		tc.mod(&r)
		_, _, err := OpenRecord(r, at(1))
		if err == nil || !strings.Contains(err.Error(), `open release "R1"`) || !namesField(err, tc.field) {
			t.Errorf("%s: OpenRecord error = %v, want a refusal naming the release and %s", tc.name, err, tc.field)
		}
	}
}

func TestRecordJSONUsesSnakeCaseNames(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(record("R1", StateHealthy, 0, healthyAt(3), rollbackOf("R0")))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"release_id", "app", "environment", "cluster", "repository", "kind", "rollback_of",
		"rollback_reason", "image", "digest", "git_revision", "config_revision", "pr_url", "pr_number",
		"flow_started_at", "state", "healthy_at", "rolled_back_by", "last_fact_at", "created_at", "updated_at"} {
		if !strings.Contains(string(b), `"`+key+`":`) {
			t.Errorf("JSON %s has no %q", b, key)
		}
	}
	if !strings.Contains(string(b), `"state":"healthy"`) || !strings.Contains(string(b), `"kind":"rollback"`) {
		t.Errorf("JSON %s: state and kind must use their user-facing spelling", b)
	}
}

// The caps are for what callers send. A record ripcord opens itself (a
// rollback whose id it builds from the cluster and environment, whose
// reason comes from a comment) is checked by Validate, which has none; and
// a fact is capped as it arrives (ValidateSent), not when the reducer
// validates it again on a replay, so facts stored before the caps apply.
func TestCapsApplyWhereFieldsArrive(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 253)
	built := Record{ReleaseID: "rollback-0123abcd-abcdef:" + long + "/" + long, App: "checkout", Environment: long,
		Cluster: long, Image: "registry.example/checkout:v1", Kind: KindRollback, RollbackOf: "r1",
		RollbackReason: strings.Repeat("x", MaxReasonBytes+1)}
	if err := built.Validate(); err != nil {
		t.Errorf("Validate refused a record ripcord builds: %v", err)
	}
	if err := built.ValidateRegistered(nil); err == nil || !strings.Contains(err.Error(), "release_id: must be at most 253 characters") ||
		!strings.Contains(err.Error(), "rollback_reason: must be at most 4096 bytes") {
		t.Errorf("ValidateRegistered = %v, want release_id and rollback_reason over their caps", err)
	}
	old := strings.Repeat("r", MaxIDLen+1)
	stored := func(id string) bool { return id == old }
	for _, id := range []string{old, strings.Repeat("u", MaxIDLen+1)} {
		sent := fact(id, PhaseHealthy, 1)
		err := sent.ValidateSent(stored)
		if want := id != old; (err != nil) != want || (want && err.Error() != "release_id: must be at most 253 characters, got 254") {
			t.Errorf("ValidateSent of release_id %.8s… (stored: %v) = %v", id, !want, err)
		}
		rb := Record{ReleaseID: "rb", App: "checkout", Environment: "prod", Cluster: "prod-eu", Image: "registry.example/checkout:v1",
			Kind: KindRollback, RollbackOf: id, RollbackReason: "errors up"}
		err = rb.ValidateRegistered(stored)
		if want := id != old; (err != nil) != want || (want && err.Error() != "rollback_of: must be at most 253 characters, got 254") {
			t.Errorf("ValidateRegistered of rollback_of %.8s… (stored: %v) = %v", id, !want, err)
		}
	}
	f := fact("r1", PhaseHealthy, 1, func(f *Fact) { f.Images = []string{strings.Repeat("i", MaxImageLen+1)} })
	if err := f.Validate(); err != nil {
		t.Errorf("Validate refused a stored fact over a cap: %v", err)
	}
	if err := f.ValidateSent(nil); err == nil || err.Error() != "images[0]: must be at most 1024 characters, got 1025" {
		t.Errorf("ValidateSent = %v, want images[0] over its cap", err)
	}
}
