package rollbackflow

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/repoconfig"
)

var t0 = time.Date(2026, 10, 10, 12, 0, 0, 0, time.UTC)

func rec(n int, state records.State, healthy bool) records.Record {
	r := records.Record{ReleaseID: fmt.Sprintf("r%d", n), App: "checkout", Environment: "prod", Cluster: "prod-eu",
		Kind: records.KindPromote, Image: fmt.Sprintf("ghcr.io/acme/checkout:v%d", n), Digest: "sha256:" + strings.Repeat(fmt.Sprint(n), 64),
		GitRevision: strings.Repeat(fmt.Sprintf("%x", 10+n), 40), State: state, CreatedAt: t0.Add(time.Duration(n) * time.Minute)}
	if healthy {
		h := r.CreatedAt.Add(time.Second)
		r.HealthyAt = &h
	}
	if state != records.StateOpened { // it ran: a fact moved it (records.Record.Ran)
		f := r.CreatedAt.Add(2 * time.Second)
		r.LastFactAt = &f
	}
	return r
}

func input(newest ...records.Record) Input {
	return Input{Start: Start{App: "checkout", Environment: "prod", Reason: "r3 leaks"}, Repository: "acme/checkout",
		Cluster: "prod-eu", Window: 5, Newest: newest, ConfigRevision: "feedface",
		Env: repoconfig.Environment{Name: "prod", Cluster: "prod-eu", Rollback: repoconfig.Rollback{Mode: repoconfig.ModePullRequest,
			Repository: "acme/gitops", Base: "main", File: "release.yaml", Fields: repoconfig.Fields{Image: "image", Digest: "digest", ReleaseID: "id"}}}}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	r1, r2, r3 := rec(1, records.StateSuperseded, true), rec(2, records.StateHealthy, true), rec(3, records.StateFailed, false)
	opened := rec(4, records.StateOpened, false)
	noSHA := rec(2, records.StateHealthy, true)
	noSHA.GitRevision = ""
	cases := []struct {
		name     string
		in       func() Input
		target   string // "" expects a refusal
		eligible bool
		refusal  string
	}{
		{"the newest healthy release before the failed one", func() Input { return input(r3, r2, r1) }, "r2", true, ""},
		{"an opened release (an unmerged pull request) is not what runs", func() Input { return input(opened, r3, r2, r1) }, "r2", true, ""},
		{"a named older release is allowed", func() Input { in := input(r3, r2, r1); in.Start.To, in.Named = "r1", &r1; return in }, "r1", true, ""},
		{"a named release that never got healthy is allowed but not eligible", func() Input {
			r0 := rec(0, records.StateFailed, false)
			in := input(r3, r2, r1, r0)
			in.Start.To, in.Named = "r0", &r0
			return in
		}, "r0", false, ""},
		{"nothing eligible is refused with the reason", func() Input { return input(r3, rec(2, records.StateFailed, false)) }, "", false, "no eligible rollback target"},
		{"nothing deployed yet", func() Input { return input(opened) }, "", false, "nothing to roll back"},
		{"the button of the running release", func() Input { in := input(opened, r3, r2, r1); in.Start.Of = "r3"; return in }, "r2", true, ""},
		{"the button of a release that no longer runs", func() Input { in := input(r3, r2, r1); in.Start.Of = "r2"; return in }, "", false,
			"release r2 is not the one running in prod/prod-eu any more: r3 is"},
		{"the running release cannot be the target", func() Input { in := input(r3, r2); in.Start.To, in.Named = "r3", &r3; return in }, "", false, "is the one running now"},
		{"a release of another environment", func() Input {
			other := rec(9, records.StateHealthy, true)
			other.Environment = "staging"
			in := input(r3, r2)
			in.Start.To, in.Named = "r9", &other
			return in
		}, "", false, "not checkout in prod/prod-eu"},
		{"mode workflow is not started by hand", func() Input { in := input(r3, r2); in.Env.Rollback.Mode = repoconfig.ModeWorkflow; return in }, "", false, "mode workflow"},
		{"a target without a commit cannot become a pull request", func() Input { return input(r3, noSHA) }, "", false, "has no git_revision"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Decide(c.in())
			var refused *Refused
			if c.target == "" {
				if !errors.As(err, &refused) || !strings.Contains(refused.Reason, c.refusal) {
					t.Fatalf("Decide = %+v, %v; want a refusal saying %q", p, err, c.refusal)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rb := p.Request.Rollback
			if p.Target != c.target || p.Record.RollbackOf != "r3" || rb.Eligibility.Eligible != c.eligible || p.Record.Kind != records.KindRollback {
				t.Errorf("plan target %s of %s, eligible %v (%s); want %s of r3, eligible %v", p.Target, p.Record.RollbackOf, rb.Eligibility.Eligible, rb.Eligibility.Reason, c.target, c.eligible)
			}
			if err := p.Record.Validate(); err != nil {
				t.Errorf("the rollback record would be refused: %v", err)
			}
			if p.Record.ConfigRevision != "feedface" || p.Record.GitRevision == "feedface" {
				t.Errorf("config_revision %s, git_revision %s: config comes from main, the revision is the target's", p.Record.ConfigRevision, p.Record.GitRevision)
			}
		})
	}
}

func TestReleaseIDIsTheSameForTheSameRollbackOnly(t *testing.T) {
	t.Parallel()
	r1, r2 := rec(1, records.StateHealthy, true), rec(2, records.StateHealthy, true)
	a, b := ReleaseID("r3", r2, "prod"), ReleaseID("r3", r2, "prod")
	if a != b || !strings.HasPrefix(a, "rollback-"+r2.GitRevision[:8]+"-") || !strings.HasSuffix(a, ":prod-eu/prod") {
		t.Errorf("ReleaseID = %q, %q", a, b)
	}
	if ReleaseID("r4", r2, "prod") == a || ReleaseID("r3", r1, "prod") == a {
		t.Error("another rollback got the same release id")
	}
}

// A rollback in a cluster and environment named at length gets an id within
// records.MaxIDLen, as the facts that echo it and a rollback of it that
// names it in rollback_of need: it keeps its start and stays its own.
func TestReleaseIDIsBounded(t *testing.T) {
	t.Parallel()
	r2 := rec(2, records.StateHealthy, true)
	r2.Cluster = strings.Repeat("c", records.MaxIDLen)
	env := strings.Repeat("e", records.MaxIDLen)
	a := ReleaseID("r3", r2, env)
	if n := utf8.RuneCountInString(a); n > records.MaxIDLen || !strings.HasPrefix(a, "rollback-"+r2.GitRevision[:8]+"-") {
		t.Errorf("ReleaseID = %q (%d characters), want at most %d starting rollback-<sha8>-", a, n, records.MaxIDLen)
	}
	if a != ReleaseID("r3", r2, env) || a == ReleaseID("r4", r2, env) || a == AttemptID("r3", r2, env, 2) {
		t.Errorf("bounded ReleaseID %q is not the same rollback's only", a)
	}
}

func TestParseArgs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args       string
		to, reason string
	}{
		{"", "", ""},
		{"the canary is failing", "", "the canary is failing"},
		{"to r1:prod-eu/prod r2 is bad too", "r1:prod-eu/prod", "r2 is bad too"},
		{"TO sha256:abc", "sha256:abc", ""},
		{"to", "", "to"}, // "to" alone is a reason word, not a target
	} {
		to, reason := ParseArgs(strings.Fields(c.args))
		if to != c.to || reason != c.reason {
			t.Errorf("ParseArgs(%q) = %q, %q; want %q, %q", c.args, to, reason, c.to, c.reason)
		}
	}
}

// `/ripcord rollback to X` looks X up as a release unless it is a digest: a
// release id that starts with "sha" is a release id.
func TestNamesDigest(t *testing.T) {
	t.Parallel()
	for to, want := range map[string]bool{
		"sha256:" + strings.Repeat("a", 64):  true,
		"sha512:" + strings.Repeat("b", 128): true,
		"shadow-7:prod-eu/prod":              false,
		"sha-1f2e3d:prod-eu/prod":            false,
		"r2:prod-eu/prod":                    false,
	} {
		if got := namesDigest(to); got != want {
			t.Errorf("namesDigest(%q) = %v, want %v", to, got, want)
		}
	}
}
