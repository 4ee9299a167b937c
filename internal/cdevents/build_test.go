package cdevents

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cdevents/sdk-go/pkg/api"

	"github.com/ripcord/ripcord/records"
)

const (
	source  = "https://ripcord.example.com"
	digPrev = "sha256:0000000000000000000000000000000000000000000000000000000000000abc"
)

var t0 = time.Date(2026, 10, 5, 9, 0, 0, 0, time.UTC)

// promote is a healthy release of checkout to prod on prod-eu.
func promote() records.Record {
	healthy := t0.Add(-time.Hour)
	return records.Record{
		ReleaseID: "c1:prod-eu/prod", App: "checkout", Environment: "prod", Cluster: "prod-eu",
		Repository: "acme/gitops", Kind: records.KindPromote,
		Image: "ghcr.io/acme/checkout:v2", Digest: digA,
		State: records.StateHealthy, HealthyAt: &healthy, CreatedAt: t0.Add(-2 * time.Hour),
	}
}

// rollback is a progressing rollback of promote() to an older digest.
func rollback() records.Record {
	return records.Record{
		ReleaseID: "c2:prod-eu/prod", App: "checkout", Environment: "prod", Cluster: "prod-eu",
		Repository: "acme/gitops", Kind: records.KindRollback,
		RollbackOf: "c1:prod-eu/prod", RollbackReason: "error rate 12%",
		Image: "ghcr.io/acme/checkout:v1", Digest: digPrev, GitRevision: "9f1c2ab",
		State: records.StateProgressing, CreatedAt: t0.Add(-10 * time.Minute),
	}
}

func healthyFact(rec records.Record, at time.Time) records.Fact {
	return records.Fact{
		Source: records.SourceRollout, Cluster: rec.Cluster, Namespace: "checkout", Name: "checkout",
		UID: "uid-1", Generation: 3, ObservedGeneration: 3, Phase: records.PhaseHealthy,
		Images: []string{rec.Image}, ReleaseID: rec.ReleaseID, ObservedAt: at,
	}
}

// reduce runs the real reducer on a Healthy fact for rec and returns the
// record as updated and the effects it asked for.
func reduce(t *testing.T, rec records.Record, siblings []records.Record, everHealthy bool) (records.Record, []records.Effect) {
	t.Helper()
	healthyAt := t0.Add(-time.Minute)
	res := records.Reduce(records.Input{
		Fact: healthyFact(rec, healthyAt), Record: &rec, Siblings: siblings,
		EverHealthy: everHealthy, Now: t0,
	})
	if len(res.Records) == 0 || res.Records[0].ReleaseID != rec.ReleaseID {
		t.Fatalf("reducer outcome %s (%s): the fact's record was not updated", res.Outcome, res.Reason)
	}
	return res.Records[0], res.Effects
}

func deliver(t *testing.T, s *sink, e records.Effect, rec records.Record, now time.Time) {
	t.Helper()
	ev, err := Build(e, rec, source, now)
	if err != nil {
		t.Fatalf("Build(%s): %v", e.Type, err)
	}
	if err := (Sender{}).Send(context.Background(), s.URL, ev); err != nil {
		t.Fatalf("Send(%s): %v", e.Type, err)
	}
}

func TestRollbackBecomingHealthySendsUpgradedAndRolledback(t *testing.T) {
	rec, effects := reduce(t, rollback(), []records.Record{promote()}, true)
	s := newSink(t)
	for _, e := range effects {
		deliver(t, s, e, rec, t0.Add(time.Hour))
	}
	got := s.events()
	wantTypes := []string{"dev.cdevents.service.upgraded.0.3.0", "dev.cdevents.service.rolledback.0.3.0"}
	if len(got) != len(wantTypes) {
		t.Fatalf("sink got %d events, want %d (%v)", len(got), len(wantTypes), wantTypes)
	}
	for i, g := range got {
		if g.ce.Type() != wantTypes[i] || g.cd.GetType().String() != wantTypes[i] {
			t.Errorf("event %d: cloudevent type %s, cdevent type %s, want %s", i, g.ce.Type(), g.cd.GetType(), wantTypes[i])
		}
		if g.ce.ID() != EventID(effects[i].Key) || g.cd.GetId() != g.ce.ID() {
			t.Errorf("event %d: ids ce=%s cd=%s, want both %s (from key %s)", i, g.ce.ID(), g.cd.GetId(), EventID(effects[i].Key), effects[i].Key)
		}
		if !g.cd.GetTimestamp().Equal(*rec.HealthyAt) || !g.ce.Time().Equal(*rec.HealthyAt) {
			t.Errorf("event %d: timestamp %s / time %s, want healthy_at %s, not the send time", i, g.cd.GetTimestamp(), g.ce.Time(), rec.HealthyAt)
		}
		if g.cd.GetSubjectId() != "checkout" || g.cd.GetSource() != source {
			t.Errorf("event %d: subject %q source %q, want checkout from %s", i, g.cd.GetSubjectId(), g.cd.GetSource(), source)
		}
		if g.cd.GetVersion() != SpecVersion {
			t.Errorf("event %d: specversion %s, want %s", i, g.cd.GetVersion(), SpecVersion)
		}
		checkContent(t, g.cd, "prod-eu/prod", "pkg:oci/checkout@sha256%3A"+strings.TrimPrefix(digPrev, "sha256:")+"?repository_url=ghcr.io/acme/checkout&tag=v1")
		var cd CustomData
		if err := g.cd.GetCustomDataAs(&cd); err != nil {
			t.Fatalf("event %d: customData: %v", i, err)
		}
		want := CustomData{ReleaseID: "c2:prod-eu/prod", Kind: "rollback", RollbackOf: "c1:prod-eu/prod",
			RollbackReason: "error rate 12%", Repository: "acme/gitops", GitRevision: "9f1c2ab"}
		if cd != want {
			t.Errorf("event %d: customData %+v, want %+v", i, cd, want)
		}
	}
}

// checkContent reads subject.content from the event's JSON, since the SDK's
// reader interface exposes it only as an untyped value.
func checkContent(t *testing.T, cd api.CDEventV04, wantEnv, wantArtifact string) {
	t.Helper()
	raw, err := api.AsJsonBytes(cd)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Subject struct {
			Content struct {
				ArtifactID  string `json:"artifactId"`
				Environment struct {
					ID     string `json:"id"`
					Source string `json:"source"`
				} `json:"environment"`
			} `json:"content"`
		} `json:"subject"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	c := doc.Subject.Content
	if c.ArtifactID != wantArtifact {
		t.Errorf("artifactId\n got %s\nwant %s", c.ArtifactID, wantArtifact)
	}
	if c.Environment.ID != wantEnv || c.Environment.Source != source {
		t.Errorf("environment = %+v, want id %s source %s", c.Environment, wantEnv, source)
	}
}

func TestFirstHealthyReleaseInAnEnvironmentIsDeployed(t *testing.T) {
	first := promote()
	first.State, first.HealthyAt = records.StateProgressing, nil
	rec, effects := reduce(t, first, nil, false)
	if len(effects) != 1 {
		t.Fatalf("reducer effects = %+v, want one service.deployed", effects)
	}
	s := newSink(t)
	deliver(t, s, effects[0], rec, t0)
	got := s.events()
	if len(got) != 1 || got[0].cd.GetType().String() != "dev.cdevents.service.deployed.0.3.0" {
		t.Fatalf("sink got %+v, want one dev.cdevents.service.deployed.0.3.0", got)
	}
	checkContent(t, got[0].cd, "prod-eu/prod", "pkg:oci/checkout@"+escA+"?repository_url=ghcr.io/acme/checkout&tag=v2")
	if got[0].contentType != ContentType {
		t.Errorf("Content-Type %q, want structured mode %q", got[0].contentType, ContentType)
	}
}

func TestRetriedBuildCarriesTheSameIDAndTime(t *testing.T) {
	rec, effects := reduce(t, rollback(), []records.Record{promote()}, true)
	e := effects[0]
	first, err := Build(e, rec, source, t0)
	if err != nil {
		t.Fatal(err)
	}
	retry, err := Build(e, rec, source, t0.Add(6*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(first)
	b, _ := json.Marshal(retry)
	if string(a) != string(b) {
		t.Errorf("a retry six hours later built a different event:\n%s\n%s", a, b)
	}
	other, err := Build(effects[1], rec, source, t0)
	if err != nil {
		t.Fatal(err)
	}
	if other.ID() == first.ID() {
		t.Errorf("upgraded and rolledback share id %s; receivers would drop one", first.ID())
	}
}

func TestTimestampWithoutHealthyAt(t *testing.T) {
	rec := promote()
	rec.HealthyAt = nil
	e := records.Effect{Kind: records.EffectCDEvent, Type: records.CDEventServiceUpgraded,
		Key: "cdevent/upgraded/" + rec.ReleaseID, ReleaseID: rec.ReleaseID}
	fromData := t0.Add(-3 * time.Minute)
	cases := []struct {
		name string
		data map[string]string
		want time.Time
	}{
		{"effect snapshot's healthy_at is used when the record lost it",
			map[string]string{"healthy_at": fromData.Format(time.RFC3339Nano)}, fromData},
		{"no healthy_at anywhere falls back to now", nil, t0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e.Data = tc.data
			ev, err := Build(e, rec, source, t0.In(time.FixedZone("CEST", 7200)))
			if err != nil {
				t.Fatal(err)
			}
			if !ev.Time().Equal(tc.want) || ev.Time().Location() != time.UTC {
				t.Errorf("time = %s, want %s in UTC", ev.Time(), tc.want)
			}
		})
	}
}

func TestBuildRefuses(t *testing.T) {
	rec := promote()
	good := records.Effect{Kind: records.EffectCDEvent, Type: records.CDEventServiceDeployed,
		Key: "cdevent/x/" + rec.ReleaseID, ReleaseID: rec.ReleaseID}
	cases := []struct {
		name   string
		edit   func(*records.Effect, *records.Record, *string)
		wantIn string
	}{
		{"an alert effect is not an event", func(e *records.Effect, _ *records.Record, _ *string) { e.Kind = records.EffectAlert }, `kind is "alert"`},
		{"no key means no stable id", func(e *records.Effect, _ *records.Record, _ *string) { e.Key = "" }, "key is empty"},
		{"effect for another release than the record", func(e *records.Effect, _ *records.Record, _ *string) { e.ReleaseID = "c9:prod-eu/prod" }, `"c9:prod-eu/prod"`},
		{"no source", func(_ *records.Effect, _ *records.Record, s *string) { *s = " " }, "source is empty"},
		{"a service event ripcord does not send", func(e *records.Effect, _ *records.Record, _ *string) {
			e.Type = "dev.cdevents.service.published.0.3.0"
		}, "want service deployed, upgraded or rolledback"},
		{"not a service event", func(e *records.Effect, _ *records.Record, _ *string) { e.Type = "dev.cdevents.build.started.0.3.0" }, "only service events"},
		{"not a CDEvent type", func(e *records.Effect, _ *records.Record, _ *string) { e.Type = "drift" }, `"drift"`},
		{"record without app has no subject id", func(_ *records.Effect, r *records.Record, _ *string) { r.App = "" }, "c1:prod-eu/prod"},
		{"record without environment", func(_ *records.Effect, r *records.Record, _ *string) { r.Environment, r.Cluster = "", "" }, "c1:prod-eu/prod"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, r, src := good, rec, source
			tc.edit(&e, &r, &src)
			_, err := Build(e, r, src, t0)
			if err == nil || !strings.Contains(err.Error(), tc.wantIn) {
				t.Errorf("Build err = %v, want one mentioning %s", err, tc.wantIn)
			}
		})
	}
	if _, err := Build(good, rec, source, t0); err != nil {
		t.Errorf("the unedited effect must build: %v", err)
	}
}
