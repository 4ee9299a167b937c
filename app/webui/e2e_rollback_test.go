package webui_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/records"
)

// The Roll back form on the real server: who may post it, what a refusal
// says, and that a writer's rollback becomes exactly one pull request.
func TestRollbackForm(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	alice, bob, mallory := s.signIn(t, "alice"), s.signIn(t, "bob"), s.signIn(t, "mallory")
	post := func(t *testing.T, id string, form url.Values, who ...*http.Cookie) page {
		t.Helper()
		return s.do(t, "POST", releasePath(id)+"/rollback", form, who...)
	}
	aliceToken := s.csrf(t, r3, alice)

	t.Run("refused before anything is queued", func(t *testing.T) {
		r2Token := s.csrf(t, r2, alice) // r2's page offers "Roll back to this release"
		for _, c := range []struct {
			name   string
			who    []*http.Cookie
			form   url.Values
			status int
			want   string
		}{
			// The session ended while the page was open: say nothing was
			// done and how to go on, not that the release does not exist.
			{"not signed in", nil, url.Values{"csrf": {aliceToken}, "reason": {"x"}}, http.StatusForbidden,
				`nothing was rolled back. Sign in, then use the Roll back form again.</p><p><a href="/login?next=` + url.QueryEscape(releasePath(r3)) + `">Sign in</a>`},
			{"a user who cannot read the repository", []*http.Cookie{mallory}, url.Values{"csrf": {aliceToken}, "reason": {"x"}},
				http.StatusNotFound, "No such release"},
			{"no csrf token (a form posted from another site)", []*http.Cookie{alice}, url.Values{"reason": {"x"}},
				http.StatusForbidden, "Form refused"},
			{"another person's csrf token", []*http.Cookie{bob}, url.Values{"csrf": {aliceToken}, "reason": {"x"}},
				http.StatusForbidden, "Form refused"},
			{"the token of another release's form", []*http.Cookie{alice}, url.Values{"csrf": {r2Token}, "reason": {"x"}},
				http.StatusForbidden, "Form refused"},
			{"no reason", []*http.Cookie{alice}, url.Values{"csrf": {aliceToken}, "reason": {"  "}},
				http.StatusBadRequest, "reason: say why you roll back"},
			{"a form over 16 KiB", []*http.Cookie{alice}, url.Values{"csrf": {aliceToken}, "reason": {strings.Repeat("x", 16<<10)}},
				http.StatusRequestEntityTooLarge, "larger than 16 KiB"},
		} {
			t.Run(c.name, func(t *testing.T) {
				p := post(t, r3, c.form, c.who...)
				if p.status != c.status || !strings.Contains(p.body, c.want) {
					t.Errorf("POST = %d, want %d saying %q\n%s", p.status, c.status, c.want, p.body)
				}
			})
		}
		if n := s.rollbackJobs(); n != 0 {
			t.Errorf("refused posts queued %d rollback jobs", n)
		}
	})

	t.Run("a reader is refused with the reason", func(t *testing.T) {
		p := post(t, r3, url.Values{"csrf": {s.csrf(t, r3, bob)}, "reason": {"checkout is down"}}, bob)
		if p.status != http.StatusSeeOther || p.location != releasePath(r3) {
			t.Fatalf("POST = %d to %q, want 303 to %s\n%s", p.status, p.location, releasePath(r3), p.body)
		}
		shown := s.do(t, "GET", p.location, nil, append(p.cookies, bob)...)
		want := "Not rolling back: @bob has read access; `/ripcord rollback` needs write"
		if !strings.Contains(shown.body, `id="flash"`) || !strings.Contains(shown.body, htmlEscape(want)) {
			t.Errorf("the release page after the refusal lacks %q:\n%s", want, shown.body)
		}
		if n := s.rollbackJobs(); n != 0 {
			t.Errorf("a reader's rollback queued %d jobs", n)
		}
		if n := s.Int(`SELECT COUNT(*) FROM audit_events WHERE type = 'command_refused' AND release_id = $1`, r3); n != 1 {
			t.Errorf("command_refused events on r3 = %d, want 1", n)
		}
	})

	t.Run("a writer's rollback opens exactly one pull request", func(t *testing.T) {
		p := post(t, r3, url.Values{"csrf": {aliceToken}, "reason": {"r3 leaks memory"}}, alice)
		if p.status != http.StatusSeeOther || p.location != releasePath(r3) {
			t.Fatalf("POST = %d to %q\n%s", p.status, p.location, p.body)
		}
		shown := s.do(t, "GET", p.location, nil, append(p.cookies, alice)...)
		if want := "Rollback queued: release rollback-"; !strings.Contains(shown.body, want) ||
			!strings.Contains(shown.body, "replaces "+r3+" with "+r2) {
			t.Errorf("the release page after the rollback lacks %q:\n%s", want, shown.body)
		}
		id := s.String(`SELECT args->>'release_id' FROM river_job WHERE kind = 'rollback_pull_request'`)
		s.WaitFor("the rollback release with its pull request", wait, func() bool {
			return s.Int(`SELECT COUNT(*) FROM records WHERE release_id = $1 AND pr_number > 0`, id) == 1
		})
		s.Settle(jobKinds...)
		prs := s.GitHub.PullRequests(gitops)
		if len(prs) != 1 || s.rollbackJobs() != 1 {
			t.Fatalf("pull requests = %d, jobs = %d; want 1 and 1", len(prs), s.rollbackJobs())
		}
		if reason := s.String(`SELECT rollback_reason FROM records WHERE release_id = $1`, id); reason != "r3 leaks memory" {
			t.Errorf("rollback_reason = %q", reason)
		}
		if kind := s.String(`SELECT kind FROM records WHERE release_id = $1`, id); kind != string(records.KindRollback) {
			t.Errorf("kind = %q", kind)
		}

		// Asked again once it is open: the answer links the pull request,
		// and nothing new is opened.
		p = post(t, r3, url.Values{"csrf": {aliceToken}, "reason": {"again"}}, alice)
		shown = s.do(t, "GET", p.location, nil, append(p.cookies, alice)...)
		if !strings.Contains(shown.body, "This rollback is open already") || !strings.Contains(shown.body, "/acme/gitops/pull/") {
			t.Errorf("a second rollback's answer:\n%s", shown.body)
		}
		s.Settle(jobKinds...)
		if n := len(s.GitHub.PullRequests(gitops)); n != 1 {
			t.Errorf("pull requests after a second post = %d, want 1", n)
		}
	})
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}
