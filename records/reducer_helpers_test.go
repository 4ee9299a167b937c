package records

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"
)

// t0 is when the tests' releases start; at(m) is m minutes later.
var t0 = time.Date(2026, 10, 10, 9, 0, 0, 0, time.UTC)

func at(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }

func ptime(t time.Time) *time.Time { return &t }

// digestOf makes a valid, distinct digest per name.
func digestOf(name string) string {
	sum := sha256.Sum256([]byte(name))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func imageOf(name string) string { return "ghcr.io/acme/checkout@" + digestOf(name) }

// fact builds a Rollout fact on the checkout workload in prod-eu for
// release rel, observed_generation caught up, its image named after rel.
func fact(rel string, phase Phase, m int, opts ...func(*Fact)) Fact {
	f := Fact{
		Source:             SourceRollout,
		Cluster:            "prod-eu",
		Namespace:          "checkout",
		Name:               "checkout",
		UID:                "0b6e3c0e-uid",
		Generation:         2,
		ObservedGeneration: 2,
		Phase:              phase,
		StepCount:          4,
		PodHash:            "hash-" + rel,
		Images:             []string{imageOf(rel)},
		ReleaseID:          rel,
		ObservedAt:         at(m),
	}
	for _, o := range opts {
		o(&f)
	}
	return f
}

func step(n int) func(*Fact)     { return func(f *Fact) { f.Step = n } }
func gen(n int64) func(*Fact)    { return func(f *Fact) { f.Generation, f.ObservedGeneration = n, n } }
func aborted() func(*Fact)       { return func(f *Fact) { f.Abort = true } }
func image(s string) func(*Fact) { return func(f *Fact) { f.Images = []string{s} } }

// record builds an open checkout release in prod/prod-eu created at minute m.
func record(rel string, state State, m int, opts ...func(*Record)) Record {
	r := Record{
		ReleaseID:   rel,
		App:         "checkout",
		Environment: "prod",
		Cluster:     "prod-eu",
		Repository:  "acme/checkout",
		Kind:        KindPromote,
		Image:       imageOf(rel),
		State:       state,
		CreatedAt:   at(m),
		UpdatedAt:   at(m),
	}
	for _, o := range opts {
		o(&r)
	}
	return r
}

func healthyAt(m int) func(*Record) { return func(r *Record) { r.HealthyAt = ptime(at(m)) } }
func lastFact(m int) func(*Record)  { return func(r *Record) { r.LastFactAt = ptime(at(m)) } }
func rollbackOf(rel string) func(*Record) {
	return func(r *Record) { r.Kind, r.RollbackOf, r.RollbackReason = KindRollback, rel, "canary errors" }
}

// seen is the observation a previous fact of release rel left.
func seen(rel string, phase Phase, m int) *Observation {
	o := observe(fact(rel, phase, m))
	return &o
}

func taskFact(rel string, status TaskStatus, m int, opts ...func(*Fact)) Fact {
	f := Fact{
		Source:        SourceTask,
		Cluster:       "prod-eu",
		Repository:    "acme/checkout",
		WorkflowRunID: 123456789,
		RunAttempt:    1,
		Status:        status,
		App:           "checkout",
		Environment:   "prod",
		Version:       "v1a2b3c4-1760000000",
		ReleaseID:     rel,
		Metadata:      map[string]string{"commit": "1a2b3c4d", "branch": "main"},
		ObservedAt:    at(m),
	}
	for _, o := range opts {
		o(&f)
	}
	return f
}

func attempt(n int) func(*Fact) { return func(f *Fact) { f.RunAttempt = n } }

// recordOf finds a release among the records a Result saves.
func recordOf(t *testing.T, res Result, rel string) Record {
	t.Helper()
	for _, r := range res.Records {
		if r.ReleaseID == rel {
			return r
		}
	}
	t.Fatalf("result saves no record %s (saves %v)", rel, releaseIDs(res.Records))
	return Record{}
}

func releaseIDs(rs []Record) []string {
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.ReleaseID+"="+string(r.State))
	}
	return ids
}

func auditTypes(res Result) []AuditType {
	var ts []AuditType
	for _, e := range res.Audit {
		ts = append(ts, e.Type)
	}
	return ts
}

func hasAudit(res Result, t AuditType, rel string) bool {
	for _, e := range res.Audit {
		if e.Type == t && e.ReleaseID == rel {
			return true
		}
	}
	return false
}

func effectTypes(res Result) []string {
	var ts []string
	for _, e := range res.Effects {
		ts = append(ts, e.Type)
	}
	return ts
}
