package cdevents

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cdevents/sdk-go/pkg/api"
	v05 "github.com/cdevents/sdk-go/pkg/api/v05"
	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/google/uuid"

	"github.com/ripcord/ripcord/records"
)

// SpecVersion is the CDEvents specification the events follow.
const SpecVersion = "0.5.1"

// idNamespace scopes the name-based UUIDs of event ids to ripcord, so two
// producers hashing the same key string still mint different ids.
var idNamespace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://github.com/ripcord/ripcord/cdevents"))

// CustomData is the customData of every event ripcord sends: what a
// receiver needs to join the event to ripcord's release record. The names
// are the record's JSON names.
type CustomData struct {
	ReleaseID      string `json:"release_id"`
	Kind           string `json:"kind"`
	RollbackOf     string `json:"rollback_of,omitempty"`
	RollbackReason string `json:"rollback_reason,omitempty"`
	Repository     string `json:"repository,omitempty"`
	GitRevision    string `json:"git_revision,omitempty"`
	PRURL          string `json:"pr_url,omitempty"`
}

// serviceEvent is what the SDK's service deployed, upgraded and rolledback
// events have in common; their concrete types differ only in name.
type serviceEvent interface {
	api.CDEvent
	SetSubjectArtifactId(string)
	SetSubjectEnvironment(*api.Reference)
}

// Build renders a cdevent effect for record r as a CloudEvent carrying a
// CDEvent of spec 0.5.1, validated against the spec's schema.
//
// The effect's type picks the event by subject and predicate only
// (service.deployed, service.upgraded or service.rolledback); whatever
// version it names, the event is the one spec 0.5.1 defines (0.3.0).
//
// The subject is the service: id is the app, and content.environment.id is
// "<cluster>/<environment>" (just the environment when the record has no
// cluster), so one app deployed to several clusters stays one service in
// several environments. The artifactId is ArtifactID(r).
//
// The event id is a name-based UUID of the effect's key and the timestamp is
// the record's healthy_at (now only when the record has none), so building
// the same effect again, on any retry, gives the same event.
func Build(e records.Effect, r records.Record, source string, now time.Time) (cloudevents.Event, error) {
	var none cloudevents.Event
	if e.Kind != records.EffectCDEvent {
		return none, fmt.Errorf("build cdevent: effect kind is %q, want %q", e.Kind, records.EffectCDEvent)
	}
	if e.Key == "" {
		return none, errors.New("build cdevent: effect key is empty; the event id is derived from it")
	}
	if e.ReleaseID != "" && e.ReleaseID != r.ReleaseID {
		return none, fmt.Errorf("build cdevent %s: effect is for release %q but the record is %q", e.Key, e.ReleaseID, r.ReleaseID)
	}
	if strings.TrimSpace(source) == "" {
		return none, fmt.Errorf("build cdevent %s: source is empty (want ripcord's public URL)", e.Key)
	}
	ev, err := newServiceEvent(e.Type)
	if err != nil {
		return none, fmt.Errorf("build cdevent %s: %w", e.Key, err)
	}
	stamp := timestamp(e, r, now)
	ev.SetId(EventID(e.Key))
	ev.SetSource(source)
	ev.SetTimestamp(stamp)
	ev.SetSubjectId(r.App)
	ev.SetSubjectArtifactId(ArtifactID(r))
	ev.SetSubjectEnvironment(&api.Reference{Id: environmentID(r), Source: source})
	if err := ev.SetCustomData("application/json", customData(r)); err != nil {
		return none, fmt.Errorf("build cdevent %s: customData: %w", e.Key, err)
	}
	// AsCloudEvent validates the CDEvent (struct tags and JSON schema).
	ce, err := api.AsCloudEvent(ev)
	if err != nil {
		return none, fmt.Errorf("build cdevent %s for release %s: %w", e.Key, r.ReleaseID, err)
	}
	ce.SetTime(stamp)
	return *ce, nil
}

// EventID is the CDEvent (and CloudEvent) id for an effect key: the same key
// always gives the same id, which is what receivers deduplicate on.
func EventID(key string) string {
	return uuid.NewSHA1(idNamespace, []byte(key)).String()
}

func newServiceEvent(typ string) (serviceEvent, error) {
	t, err := api.ParseType(typ)
	if err != nil {
		return nil, fmt.Errorf("type %q: %w", typ, err)
	}
	if t.Subject != "service" {
		return nil, fmt.Errorf("type %q: ripcord sends only service events", typ)
	}
	switch t.Predicate {
	case "deployed":
		return v05.NewServiceDeployedEvent()
	case "upgraded":
		return v05.NewServiceUpgradedEvent()
	case "rolledback":
		return v05.NewServiceRolledbackEvent()
	}
	return nil, fmt.Errorf("type %q: want service deployed, upgraded or rolledback", typ)
}

// timestamp is when the release became healthy. It must not move between
// retries (the spec: a re-transmission keeps source, id and timestamp), so
// now is only the last resort for a record without healthy_at.
func timestamp(e records.Effect, r records.Record, now time.Time) time.Time {
	if r.HealthyAt != nil {
		return r.HealthyAt.UTC()
	}
	if t, err := time.Parse(time.RFC3339Nano, e.Data["healthy_at"]); err == nil {
		return t.UTC()
	}
	return now.UTC()
}

func environmentID(r records.Record) string {
	if r.Cluster == "" {
		return r.Environment
	}
	return r.Cluster + "/" + r.Environment
}

func customData(r records.Record) CustomData {
	return CustomData{
		ReleaseID:      r.ReleaseID,
		Kind:           string(r.Kind),
		RollbackOf:     r.RollbackOf,
		RollbackReason: r.RollbackReason,
		Repository:     r.Repository,
		GitRevision:    r.GitRevision,
		PRURL:          r.PRURL,
	}
}
