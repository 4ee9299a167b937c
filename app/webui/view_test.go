package webui

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/eligibility"
	"github.com/ripcord/ripcord/records"
)

func rec(id, app, env, cluster, repo, image string, state records.State, created time.Time, healthy bool) records.Record {
	r := records.Record{ReleaseID: id, App: app, Environment: env, Cluster: cluster, Repository: repo, Image: image,
		Kind: records.KindPromote, State: state, CreatedAt: created}
	if healthy {
		at := created.Add(time.Minute)
		r.HealthyAt = &at
	}
	if state != records.StateOpened { // it ran: a fact moved it (records.Record.Ran)
		last := created.Add(2 * time.Minute)
		r.LastFactAt = &last
	}
	return r
}

func TestBuildGroups(t *testing.T) {
	t.Parallel()
	rs := []records.Record{ // deliberately not newest first
		rec("a-1", "shop", "prod", "eu", "acme/shop", "shop:v1", records.StateSuperseded, t0, true),
		rec("a-3", "shop", "prod", "eu", "acme/shop", "shop:v3", records.StateFailed, t0.Add(2*time.Hour), false),
		rec("a-2", "shop", "prod", "eu", "acme/shop", "shop:v2", records.StateHealthy, t0.Add(time.Hour), true),
		rec("a-0", "shop", "prod", "eu", "acme/shop", "shop:v0", records.StateFailed, t0.Add(-time.Hour), false),
		rec("b-1", "shop", "prod", "us", "acme/shop", "shop:v2", records.StateHealthy, t0.Add(30*time.Minute), true),
		rec("c-1", "api", "staging", "eu", "acme/api", "api:v1", records.StateProgressing, t0, false),
		rec("s-1", "vault", "prod", "eu", "acme/secret", "vault:v1", records.StateHealthy, t0, true),
		rec("n-1", "orphan", "prod", "eu", "", "orphan:v1", records.StateHealthy, t0, true),
	}
	groups := buildGroups(rs, nil, map[string]bool{"acme/shop": true, "acme/api": true}, nil, defaultWindow, t0.Add(3*time.Hour))

	var names []string
	for _, g := range groups {
		names = append(names, g.App+"/"+g.Environment)
	}
	if want := []string{"api/staging", "shop/prod"}; !slices.Equal(names, want) {
		t.Fatalf("groups %v, want %v (unreadable and repository-less records hidden, sorted by name)", names, want)
	}
	shop := groups[1]
	var ids []string
	rows := map[string]row{}
	for _, r := range shop.Rows {
		ids = append(ids, r.ReleaseID)
		rows[r.ReleaseID] = r
	}
	if want := []string{"a-3", "a-2", "b-1", "a-1", "a-0"}; !slices.Equal(ids, want) {
		t.Errorf("rows %v, want newest first %v", ids, want)
	}
	for _, c := range []struct {
		name      string
		id        string
		current   bool
		eligible  bool
		rollback  string
		reasonHas string
	}{
		{"the newest release of a cluster is current, not a target", "a-3", true, false, "", "current"},
		{"each cluster has its own current release", "b-1", true, false, "", "current"},
		{"a healthy release before the current one is a target", "a-2", false, true,
			"ripcord rollback --app shop --environment prod --cluster eu --to a-2 --reason '…'", "reached healthy"},
		{"a superseded release that was healthy is still a target", "a-1", false, true, "--to a-1", "reached healthy"},
		{"a release that never became healthy is not", "a-0", false, false, "", "never"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rows[c.id]
			if r.Current != c.current || r.Eligible != c.eligible || !strings.Contains(r.RollbackCLI, c.rollback) ||
				(c.rollback == "" && r.RollbackCLI != "") || !strings.Contains(r.Eligibility, c.reasonHas) {
				t.Errorf("%s: current %v eligible %v rollback %q reason %q", c.id, r.Current, r.Eligible, r.RollbackCLI, r.Eligibility)
			}
		})
	}
	if len(shop.Targets) != 2 || shop.Targets[0].Current != "a-3" || shop.Targets[1].Current != "b-1" {
		t.Fatalf("targets %+v, want eu (a-3) and us (b-1)", shop.Targets)
	}
	if !shop.Targets[0].HasEligible || shop.Targets[1].HasEligible || groups[0].Targets[0].HasEligible {
		t.Errorf("rollback hints %+v %+v: want one only for eu, the cluster with an eligible release", shop.Targets, groups[0].Targets)
	}
	if got := rows["a-2"].When; got != "2 hours ago" {
		t.Errorf("a-2 when = %q", got)
	}
}

func TestShellQuote(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, in, want string }{
		{"a plain word stays", "shop-api_v1.2", "shop-api_v1.2"},
		{"a space is quoted", "my app", "'my app'"},
		{"a quote cannot end the quoting", "it's", `'it'\''s'`},
		{"command substitution is inert", "$(rm -rf /)", "'$(rm -rf /)'"},
		{"empty is an empty argument", "", "''"},
	} {
		if got := shellQuote(c.in); got != c.want {
			t.Errorf("%s: shellQuote(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
	}
}

func TestAgo(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{30 * time.Second, "just now"},
		{time.Minute, "1 minute ago"},
		{59 * time.Minute, "59 minutes ago"},
		{3 * time.Hour, "3 hours ago"},
		{49 * time.Hour, "2 days ago"},
		{8 * 24 * time.Hour, "2 Nov 2026"},
	} {
		if got := ago(t0, t0.Add(c.d)); got != c.want {
			t.Errorf("ago(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

func TestBuildReleaseTimeline(t *testing.T) {
	t.Parallel()
	r := rec("a-2", "shop", "prod", "eu", "acme/shop", "shop:v2", records.StateHealthy, t0, true)
	events := []records.AuditEvent{
		{Type: records.AuditGateEvaluated, At: t0.Add(20 * time.Minute), Data: map[string]any{"user": "bob"}},
		{Type: records.AuditReleaseOpened, At: t0},
		{Type: records.AuditCommandReceived, At: t0.Add(10 * time.Minute), Data: map[string]any{"user": "octocat", "command": "retry"}},
		{Type: records.AuditCommandReceived, At: t0.Add(15 * time.Minute), Data: map[string]any{"user": "octocat"}},
	}
	v := buildRelease(r, nil, nil, eligibility.DefaultWindow, events, Rollout{}, false, t0.Add(time.Hour))
	var types []records.AuditType
	for _, e := range v.Events {
		types = append(types, e.Type)
	}
	want := []records.AuditType{records.AuditReleaseOpened, records.AuditCommandReceived, records.AuditCommandReceived, records.AuditGateEvaluated}
	if !slices.Equal(types, want) {
		t.Errorf("timeline %v, want oldest first %v", types, want)
	}
	if !slices.Equal(v.Who, []string{"octocat", "bob"}) {
		t.Errorf("who = %v, want each person once in order of first action", v.Who)
	}
	if d := v.Events[1].Data; len(d) != 2 || d[0].Key != "command" || d[1].Key != "user" {
		t.Errorf("event data %v, want sorted by key", d)
	}
	if !v.Release.Current {
		t.Errorf("a release alone in its records is the current one")
	}
}

// An opened record (a release or rollback pull request not merged yet)
// never ran: the list must agree with the release page (isRunning) and
// with recovery that the newest record that left opened is the current
// one, and show the opened one as pending.
func TestBuildGroupsCurrentIsTheNewestReleaseThatRan(t *testing.T) {
	t.Parallel()
	rb := rec("a-4", "shop", "prod", "eu", "acme/shop", "shop:v2", records.StateOpened, t0.Add(3*time.Hour), false)
	rb.Kind, rb.RollbackOf = records.KindRollback, "a-3"
	rs := []records.Record{
		rec("a-2", "shop", "prod", "eu", "acme/shop", "shop:v2", records.StateHealthy, t0.Add(time.Hour), true),
		rec("a-3", "shop", "prod", "eu", "acme/shop", "shop:v3", records.StateHealthy, t0.Add(2*time.Hour), true),
		rb,
		// A first release whose pull request is still open: nothing runs
		// there yet, so there is no current release and no rollback hint.
		rec("n-1", "shop", "prod", "us", "acme/shop", "shop:v3", records.StateOpened, t0.Add(time.Hour), false),
	}
	groups := buildGroups(rs, nil, map[string]bool{"acme/shop": true}, nil, defaultWindow, t0.Add(4*time.Hour))
	if len(groups) != 1 {
		t.Fatalf("groups %+v, want shop/prod only", groups)
	}
	rows := map[string]row{}
	for _, r := range groups[0].Rows {
		rows[r.ReleaseID] = r
	}
	for _, id := range []string{"a-4", "n-1"} {
		if r := rows[id]; r.Current || !r.Pending || r.Eligible || r.RollbackCLI != "" || !strings.Contains(r.Eligibility, "pending") {
			t.Errorf("opened %s: current %v pending %v eligible %v rollback %q reason %q, want pending only",
				id, r.Current, r.Pending, r.Eligible, r.RollbackCLI, r.Eligibility)
		}
	}
	if r := rows["a-3"]; !r.Current || r.Pending || r.Eligible {
		t.Errorf("a-3, the newest release that ran: current %v pending %v eligible %v, want current", r.Current, r.Pending, r.Eligible)
	}
	if r := rows["a-2"]; r.Current || !r.Eligible || !strings.Contains(r.RollbackCLI, "--to a-2") {
		t.Errorf("a-2: current %v eligible %v rollback %q, want an eligible target", r.Current, r.Eligible, r.RollbackCLI)
	}
	tg := groups[0].Targets
	if len(tg) != 1 || tg[0].Cluster != "eu" || tg[0].Current != "a-3" || !tg[0].HasEligible {
		t.Errorf("targets %+v, want eu only, current a-3 (what runs), with an eligible target", tg)
	}
}

// defaultWindow is every repository's window when none has a config kept.
func defaultWindow(string) int { return eligibility.DefaultWindow }

// A rollback whose cluster action failed before the patch ends failed with
// no fact (records.FailUnrun): it never ran, so the release it was to
// replace is still what runs there, on the list and on its page alike.
func TestBuildGroupsARollbackThatFailedBeforeRunningIsNotCurrent(t *testing.T) {
	t.Parallel()
	rb := rec("a-4", "shop", "prod", "eu", "acme/shop", "shop:v2", records.StateFailed, t0.Add(3*time.Hour), false)
	rb.Kind, rb.RollbackOf, rb.LastFactAt = records.KindRollback, "a-3", nil
	rs := []records.Record{
		rec("a-2", "shop", "prod", "eu", "acme/shop", "shop:v2", records.StateHealthy, t0.Add(time.Hour), true),
		rec("a-3", "shop", "prod", "eu", "acme/shop", "shop:v3", records.StateDegraded, t0.Add(2*time.Hour), false),
		rb,
	}
	groups := buildGroups(rs, nil, map[string]bool{"acme/shop": true}, nil, defaultWindow, t0.Add(4*time.Hour))
	if len(groups) != 1 {
		t.Fatalf("groups %+v, want shop/prod only", groups)
	}
	rows := map[string]row{}
	for _, r := range groups[0].Rows {
		rows[r.ReleaseID] = r
	}
	if r := rows["a-4"]; r.Current {
		t.Errorf("a-4, a rollback that never ran, is shown current")
	}
	if r := rows["a-3"]; !r.Current {
		t.Errorf("a-3, the newest release that ran, is not shown current")
	}
	if tg := groups[0].Targets; len(tg) != 1 || tg[0].Current != "a-3" {
		t.Errorf("targets %+v, want current a-3", tg)
	}
	newestFirst := []records.Record{rb, rs[1], rs[0]}
	if isRunning(rb, newestFirst) || !isRunning(rs[1], newestFirst) {
		t.Errorf("the release page: a-4 running %v, a-3 running %v; want a-3", isRunning(rb, newestFirst), isRunning(rs[1], newestFirst))
	}
}
