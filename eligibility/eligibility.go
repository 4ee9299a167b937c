// Package eligibility answers one question: is this image a safe rollback
// target in this app, environment and cluster? The answer is computed from
// release records every time — never taken from what a pull request claims
// — and always says why, naming the record it rests on.
//
// An image is eligible when one of the newest N (default 5) records of that
// exact app, environment and cluster reached healthy (healthy_at set,
// whatever its state is now) with that image. Only releases that ran (a
// fact reached them) count: an opened record (a pull request not merged,
// closed unmerged, or a rollback whose own pull request is being judged) or
// one whose deployment failed before it changed the workload takes no place
// among the N, so it cannot push an eligible target out of the window.
//
// Digests and tags: a query pinned by digest ("sha256:…" or
// "repo@sha256:…") matches records by digest alone, whatever repository
// they were pulled from, because the digest is the content. A query without
// a digest ("repo:tag", or a bare version such as workflow deploys use)
// cannot be compared with a digest, so it matches only a record whose image
// carries that same repository and tag (or is the same string). Tags can
// move, so such an answer says so and gives the digest the record ran as,
// when one was recorded, for the caller to pin.
package eligibility

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ripcord/ripcord/records"
)

// DefaultWindow is how many of the newest records count (N).
const DefaultWindow = 5

// ReadAhead is how many records past the window a caller should read, so
// that opened records, which take no place in it, do not shrink it.
const ReadAhead = 10

// Query names the image and where it would run.
type Query struct {
	App         string `json:"app"`
	Environment string `json:"environment"`
	Cluster     string `json:"cluster"`
	Image       string `json:"image"`
}

// Evidence is the record an answer rests on.
type Evidence struct {
	ReleaseID string        `json:"release_id"`
	HealthyAt *time.Time    `json:"healthy_at"`
	State     records.State `json:"state"`
	Image     string        `json:"image"`
	Digest    string        `json:"digest"`
	CreatedAt time.Time     `json:"created_at"`
	// Position is 1 for the newest release that ran in the app,
	// environment and cluster, 2 for the one before it, and so on; 0 for a
	// record of another environment or cluster, cited to explain a "no".
	Position int `json:"position"`
}

// Answer is the verdict and its reason. Evidence is set when one record
// decides the answer: the healthy one that makes the image eligible, or
// the one that came closest (never healthy, too old, other cluster).
type Answer struct {
	Eligible bool      `json:"eligible"`
	Reason   string    `json:"reason"`
	Evidence *Evidence `json:"evidence,omitempty"`
}

// Check answers q from rs, which should be the records of q's app,
// environment and cluster, newest first. Records of any other target are
// ignored (except to explain a "no"), opened records are skipped, and only
// the newest n of the rest count; n <= 0 means DefaultWindow.
func Check(rs []records.Record, q Query, n int) Answer {
	if reason := q.problem(); reason != "" {
		return Answer{Reason: reason}
	}
	if n <= 0 {
		n = DefaultWindow
	}
	here := ran(newestFirst(rs, q.App, q.Environment, q.Cluster), "")
	window := here[:min(n, len(here))]
	for i, r := range window {
		if q.matches(r) && r.HealthyAt != nil {
			return Answer{Eligible: true, Reason: q.eligibleReason(r, i+1), Evidence: evidence(r, i+1)}
		}
	}
	return q.notEligible(rs, here, n)
}

func (q Query) problem() string {
	for _, f := range []struct{ name, v string }{
		{"app", q.App}, {"environment", q.Environment}, {"cluster", q.Cluster}, {"image", q.Image},
	} {
		if strings.TrimSpace(f.v) == "" {
			return f.name + ": is required"
		}
	}
	if d := records.ParseImage(q.Image).Digest; d != "" && !records.ValidDigest(d) {
		return fmt.Sprintf(`image: digest %q is not "sha256:<64 hex>" or "sha512:<128 hex>"`, d)
	}
	return ""
}

// matches compares by digest when the query has one, otherwise by
// repository and tag (see the package doc).
func (q Query) matches(r records.Record) bool {
	want := records.ParseImage(q.Image)
	if want.Digest != "" {
		return r.ResolvedDigest() == want.Digest
	}
	if strings.TrimSpace(r.Image) == strings.TrimSpace(q.Image) {
		return true
	}
	got := records.ParseImage(r.Image)
	return want.Tag != "" && got.Repository == want.Repository && got.Tag == want.Tag
}

func (q Query) byTag() bool { return records.ParseImage(q.Image).Digest == "" }

func (q Query) where() string {
	return fmt.Sprintf("%s in %s/%s", q.App, q.Environment, q.Cluster)
}

func (q Query) eligibleReason(r records.Record, pos int) string {
	s := fmt.Sprintf("%s reached healthy at %s in release %s (%s release of %s, now %s)",
		q.Image, stamp(*r.HealthyAt), r.ReleaseID, ordinal(pos), q.where(), r.State)
	if q.byTag() {
		if d := r.ResolvedDigest(); d != "" {
			s += fmt.Sprintf("; matched by tag, which can move: it ran as %s, pin that digest", d)
		} else {
			s += "; matched by tag, which can move, and no digest was recorded"
		}
	}
	return s
}

// notEligible explains the "no", most specific reason first.
func (q Query) notEligible(all, here []records.Record, n int) Answer {
	for i, r := range here[:min(n, len(here))] {
		if q.matches(r) {
			return Answer{
				Reason: fmt.Sprintf("%s ran in release %s (%s release of %s) but never reached healthy (it is %s)",
					q.Image, r.ReleaseID, ordinal(i+1), q.where(), r.State),
				Evidence: evidence(r, i+1),
			}
		}
	}
	for i := n; i < len(here); i++ {
		if r := here[i]; q.matches(r) && r.HealthyAt != nil {
			return Answer{
				Reason: fmt.Sprintf("%s reached healthy in release %s, but that is %s release of %s and only the newest %d count",
					q.Image, r.ReleaseID, ordinal(i+1), q.where(), n),
				Evidence: evidence(r, i+1),
			}
		}
	}
	others := newestFirst(all, q.App, "", "")
	if i := slices.IndexFunc(others, func(r records.Record) bool {
		return (r.Environment != q.Environment || r.Cluster != q.Cluster) && q.matches(r) && r.HealthyAt != nil
	}); i >= 0 {
		r := others[i]
		return Answer{
			Reason: fmt.Sprintf("%s was healthy in %s/%s (release %s), not in %s/%s: eligibility is per app, environment and cluster",
				q.Image, r.Environment, r.Cluster, r.ReleaseID, q.Environment, q.Cluster),
			Evidence: evidence(r, 0),
		}
	}
	if i := slices.IndexFunc(newestFirst(all, q.App, q.Environment, q.Cluster), func(r records.Record) bool {
		return !r.Ran() && q.matches(r)
	}); i >= 0 {
		r := newestFirst(all, q.App, q.Environment, q.Cluster)[i]
		return Answer{
			Reason: fmt.Sprintf("%s is the image of release %s of %s, which has not run (it is %s): only releases that ran count",
				q.Image, r.ReleaseID, q.where(), r.State),
			Evidence: evidence(r, 0),
		}
	}
	if len(here) == 0 {
		return Answer{Reason: "no release of " + q.where() + " is recorded"}
	}
	reason := fmt.Sprintf("%s is not the image of any of the newest %d releases of %s that ran", q.Image, n, q.where())
	if q.byTag() {
		reason += "; a tag is only compared with releases deployed by that same tag, so ask by digest to compare content"
	}
	return Answer{Reason: reason}
}

// newestFirst keeps the records of one target (an empty environment or
// cluster matches any) and sorts them newest first. The sort is stable, so
// records with equal created_at keep the caller's order.
func newestFirst(rs []records.Record, app, env, cluster string) []records.Record {
	var out []records.Record
	for _, r := range rs {
		if r.App == app && (env == "" || r.Environment == env) && (cluster == "" || r.Cluster == cluster) {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b records.Record) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return out
}

// ran drops the records that never ran (records.Record.Ran: no fact came),
// except keep: opened ones (their pull request not merged yet), withdrawn
// ones (closed without merging) and those that failed before they changed
// the workload.
func ran(rs []records.Record, keep string) []records.Record {
	return slices.DeleteFunc(rs, func(r records.Record) bool {
		return !r.Ran() && r.ReleaseID != keep
	})
}

func evidence(r records.Record, pos int) *Evidence {
	return &Evidence{
		ReleaseID: r.ReleaseID,
		HealthyAt: r.HealthyAt,
		State:     r.State,
		Image:     r.Image,
		Digest:    r.ResolvedDigest(),
		CreatedAt: r.CreatedAt,
		Position:  pos,
	}
}

var ordinals = []string{"", "newest", "second-newest", "third-newest", "fourth-newest", "fifth-newest",
	"sixth-newest", "seventh-newest", "eighth-newest", "ninth-newest", "tenth-newest"}

// ordinal names a position the way the reason reads: "the sixth-newest".
func ordinal(pos int) string {
	if pos > 0 && pos < len(ordinals) {
		return "the " + ordinals[pos]
	}
	suffix := "th"
	if pos%100 < 11 || pos%100 > 13 {
		switch pos % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return fmt.Sprintf("the %d%s-newest", pos, suffix)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
