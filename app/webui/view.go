package webui

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ripcord/ripcord/eligibility"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/rollout/status"
)

// group is one app in one environment on the releases page.
type group struct {
	App         string
	Environment string
	Targets     []target // one per cluster, with its rollback hint
	Rows        []row    // newest first, every cluster together
}

// target is one app, environment and cluster: where a rollback happens.
type target struct {
	Cluster string
	Current string // release id of the release running there (see running)
	PRURL   string // the current release's pull request, where /ripcord rollback works
	PRNum   int
	CLI     string // ripcord rollback for the newest eligible release before the current one
	// HasEligible: some release of the cluster before the current one (in
	// its eligibility window, or listed) is a rollback target, so the hint
	// is worth showing.
	HasEligible bool
	// Form is the Roll back form; the handler adds it (it needs the session).
	Form *rollbackForm
}

// row is one release on the releases page.
type row struct {
	ReleaseID  string
	Cluster    string
	Kind       records.Kind
	RollbackOf string
	State      records.State
	StateClass string
	Image      string
	Digest     string // short form, for display
	PRURL      string
	PRNumber   int
	CreatedAt  time.Time
	When       string
	// Current is the release its app, environment and cluster runs: the
	// newest one that left opened (see running).
	Current bool
	// Pending is an opened release: its pull request is not merged, so it
	// never ran; it is neither current nor a rollback target.
	Pending bool
	// RolledOut is the status of the rollout that deployed an opened
	// release to hosts although no fact about it came: records still say
	// opened, so, like a pending one, it is neither current nor a rollback
	// target, but it did run, and the page says so.
	RolledOut string
	// RolloutSucceeded: that rollout succeeded, so it reports the release
	// healthy, and the record is opened only until the report is applied.
	RolloutSucceeded bool
	// Eligible and Eligibility are the rollback-target verdict and its reason.
	Eligible    bool
	Eligibility string
	// RollbackCLI rolls back to this release; set only when it is eligible.
	RollbackCLI string
}

// buildGroups lays out the releases of repositories the person can read:
// groups by app and environment in name order, releases newest first. rs
// may be in any order. ran are the newest releases that ran of the targets
// in rs (records.Store.NewestRan, at least the eligibility window of
// each): rs, the newest records of the whole store, may stop short of a
// target's window, and what a row says (current, eligible) and each
// cluster's rollback hint rest on that window. deployed are the opened
// releases a rollout of theirs deployed, with the rollout's status. window
// is the eligibility window of a repository's releases.
func buildGroups(rs, ran []records.Record, repos map[string]bool, deployed map[string]string, window func(repository string) int, now time.Time) []group {
	visible := readableOf(rs, repos)
	slices.SortStableFunc(visible, newestFirst)
	// The records of a target in rs are its newest ones, down to the
	// oldest listed, and ran adds those that ran past them: together,
	// newest first, the target's history as far as eligibility reads it.
	byTarget := map[[3]string][]records.Record{}
	seen := map[string]bool{}
	for _, r := range append(slices.Clone(visible), readableOf(ran, repos)...) {
		if seen[r.ReleaseID] {
			continue
		}
		seen[r.ReleaseID] = true
		k := targetKey(r)
		byTarget[k] = append(byTarget[k], r)
	}
	for _, same := range byTarget {
		slices.SortStableFunc(same, newestFirst)
	}
	var groups []group
	index := map[[2]string]int{}
	hinted := map[[3]string]bool{}
	for _, r := range visible {
		gk := [2]string{r.App, r.Environment}
		i, ok := index[gk]
		if !ok {
			i = len(groups)
			index[gk] = i
			groups = append(groups, group{App: r.App, Environment: r.Environment})
		}
		same := byTarget[targetKey(r)]
		row := buildRow(r, same, visible, window(r.Repository), now)
		if st, ok := deployed[r.ReleaseID]; ok {
			row.rolledOut(st)
		}
		groups[i].Rows = append(groups[i].Rows, row)
		if !hinted[targetKey(r)] {
			hinted[targetKey(r)] = true
			if tg, ok := buildTargetOf(same, window(r.Repository), now); ok {
				groups[i].Targets = append(groups[i].Targets, tg)
			}
		}
	}
	slices.SortFunc(groups, func(a, b group) int {
		return cmp.Or(cmp.Compare(a.App, b.App), cmp.Compare(a.Environment, b.Environment))
	})
	return groups
}

func readableOf(rs []records.Record, repos map[string]bool) []records.Record {
	var out []records.Record
	for _, r := range rs {
		if canRead(repos, r.Repository) {
			out = append(out, r)
		}
	}
	return out
}

func targetKey(r records.Record) [3]string { return [3]string{r.App, r.Environment, r.Cluster} }

// buildTargetOf is the rollback hint of a target whose records (newest
// first) are same, when a release runs there: HasEligible when one of
// them before the current one is eligible within window.
func buildTargetOf(same []records.Record, window int, now time.Time) (target, bool) {
	cur := running(same)
	if cur == "" {
		return target{}, false
	}
	i := slices.IndexFunc(same, func(r records.Record) bool { return r.ReleaseID == cur })
	tg := buildTarget(same[i])
	for _, r := range same {
		if r.ReleaseID != cur && buildRow(r, same, nil, window, now).Eligible {
			tg.HasEligible = true
			break
		}
	}
	return tg, true
}

// newestFirst orders as the records store does: created_at, then release id.
func newestFirst(a, b records.Record) int {
	return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ReleaseID, a.ReleaseID))
}

// running is the release id that same (newest first, one app,
// environment and cluster) runs: the newest record that ran (a fact reached
// it), as rollbackflow and recovery decide; "" when none did.
func running(same []records.Record) string {
	for _, r := range same {
		if r.Ran() {
			return r.ReleaseID
		}
	}
	return ""
}

// buildRow describes r; same are the records of r's app, environment and
// cluster, newest first, which eligibility counts, the newest window of
// those that ran. elsewhere are records of r's app the person can read,
// of any target (those of r's own are left out): they never make r
// eligible, but a "no" says where else its image ran healthy, as
// GET /api/v1/eligibility does; nil when only the verdict matters.
func buildRow(r records.Record, same, elsewhere []records.Record, window int, now time.Time) row {
	out := row{ReleaseID: r.ReleaseID, Cluster: r.Cluster, Kind: r.Kind, RollbackOf: r.RollbackOf,
		State: r.State, StateClass: stateClass(r.State), Image: r.Image, Digest: shortDigest(r.ResolvedDigest()),
		PRURL: r.PRURL, PRNumber: r.PRNumber, CreatedAt: r.CreatedAt, When: ago(r.CreatedAt, now)}
	switch {
	case r.State == records.StateOpened:
		out.Pending = true
		out.Eligibility = "pending: its pull request is not merged, so it never ran here"
		return out
	case running(same) == r.ReleaseID:
		out.Current = true
		out.Eligibility = "the current release here"
		return out
	}
	q := eligibility.Query{App: r.App, Environment: r.Environment, Cluster: r.Cluster, Image: imageQuery(r)}
	ans := eligibility.Check(same, q, window)
	if !ans.Eligible {
		others := slices.DeleteFunc(slices.Clone(elsewhere), func(o records.Record) bool {
			return o.App != r.App || targetKey(o) == targetKey(r)
		})
		if len(others) > 0 {
			ans = eligibility.Check(append(slices.Clone(same), others...), q, window)
		}
	}
	out.Eligible, out.Eligibility = ans.Eligible, ans.Reason
	if ans.Eligible {
		out.RollbackCLI = rollbackCLI(r, r.ReleaseID)
	}
	return out
}

func buildTarget(current records.Record) target {
	return target{Cluster: current.Cluster, Current: current.ReleaseID, PRURL: current.PRURL,
		PRNum: current.PRNumber, CLI: rollbackCLI(current, "")}
}

// imageQuery asks eligibility about what r actually ran: its digest when
// one is known (tags can move), else its image reference.
func imageQuery(r records.Record) string {
	if d := r.ResolvedDigest(); d != "" {
		return d
	}
	return r.Image
}

// rollbackCLI is the `ripcord rollback` line for r's app, environment and
// cluster; to names the target release, or is empty for the server's
// choice (the newest eligible release before the current one).
func rollbackCLI(r records.Record, to string) string {
	parts := []string{"ripcord rollback", "--app", shellQuote(r.App), "--environment", shellQuote(r.Environment)}
	if r.Cluster != "" {
		parts = append(parts, "--cluster", shellQuote(r.Cluster))
	}
	if to != "" {
		parts = append(parts, "--to", shellQuote(to))
	}
	return strings.Join(append(parts, "--reason", "'…'"), " ")
}

// shellQuote leaves plain words alone and single-quotes anything else, so
// the line can be pasted into a shell as it is.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// stateClass is the badge colour of a state.
func stateClass(s records.State) string {
	switch s {
	case records.StateHealthy:
		return "ok"
	case records.StateOpened, records.StateProgressing, records.StatePaused:
		return "running"
	case records.StateDegraded, records.StateAborted, records.StateFailed:
		return "bad"
	}
	return "done"
}

func shortDigest(d string) string {
	algo, hex, ok := strings.Cut(d, ":")
	if !ok || len(hex) <= 12 {
		return d
	}
	return algo + ":" + hex[:12]
}

// ago says how long before now t was, roughly, as people read it; older
// than a week it is the date.
func ago(t, now time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return plural(int(d/time.Minute), "minute") + " ago"
	case d < 24*time.Hour:
		return plural(int(d/time.Hour), "hour") + " ago"
	case d < 7*24*time.Hour:
		return plural(int(d/(24*time.Hour)), "day") + " ago"
	}
	return t.UTC().Format("2 Jan 2006")
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// rolledOut marks an opened (pending) row whose rollout, of status st,
// deployed it to hosts: it ran, though no fact about it came. A rollout
// that succeeded reports its release healthy itself (rolloutflow's
// healthy report), so its record is opened only until that report is
// applied: the row says so rather than that no fact came.
func (r *row) rolledOut(st string) {
	if !r.Pending {
		return
	}
	r.RolledOut = st
	r.RolloutSucceeded = st == string(status.Succeeded)
	if r.RolloutSucceeded {
		r.Eligibility = "its rollout succeeded, which reports it healthy; until that report is applied " +
			"its record stays opened, so ripcord counts it neither as the current release nor as a rollback target"
		return
	}
	r.Eligibility = fmt.Sprintf("its rollout deployed it to hosts (rollout %s), but no fact about it came: "+
		"its record stays opened, so ripcord counts it neither as the current release nor as a rollback target", st)
}
