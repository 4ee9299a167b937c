package webui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// signedIn returns the session of the request, if it has a valid one.
func (h *handler) signedIn(r *http.Request) (session, bool) {
	app := h.app()
	if app.ClientSecret == "" {
		return session{}, false
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return session{}, false
	}
	s, err := newSealer(app.ClientSecret)
	if err != nil {
		return session{}, false
	}
	return s.openSession(c.Value, h.now())
}

// login sends the browser to GitHub's sign-in page with a fresh state, kept
// sealed in a cookie for the callback to compare.
func (h *handler) login(w http.ResponseWriter, r *http.Request) {
	app := h.app()
	if app.ClientID == "" || app.ClientSecret == "" {
		h.say(w, http.StatusServiceUnavailable, session{}, noOAuthClient)
		return
	}
	s, err := newSealer(app.ClientSecret)
	if err != nil {
		h.internal(w, session{}, "make the cookie key", err)
		return
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	st := oauthState{State: hex.EncodeToString(b), Next: localPath(r.URL.Query().Get("next")),
		Expires: h.now().Add(stateLifetime)}
	sealed, err := s.seal(stateCookie, st)
	if err != nil {
		h.internal(w, session{}, "seal the sign-in state", err)
		return
	}
	h.setCookie(w, stateCookie, sealed, int(stateLifetime.Seconds()))
	q := url.Values{"client_id": {app.ClientID}, "state": {st.State}, "redirect_uri": {h.callbackURL()}}
	http.Redirect(w, r, webURL(app, "login/oauth/authorize")+"?"+q.Encode(), http.StatusFound)
}

func (h *handler) callbackURL() string { return h.publicURL + "/login/callback" }

// callback is where GitHub sends the browser back. The state must be the
// one this browser was given (else a third party could sign a victim in as
// themselves); the code becomes a user token, kept only in the sealed
// session cookie.
func (h *handler) callback(w http.ResponseWriter, r *http.Request) {
	app := h.app()
	if app.ClientID == "" || app.ClientSecret == "" {
		h.say(w, http.StatusServiceUnavailable, session{}, noOAuthClient)
		return
	}
	s, err := newSealer(app.ClientSecret)
	if err != nil {
		h.internal(w, session{}, "make the cookie key", err)
		return
	}
	q := r.URL.Query()
	var st oauthState
	c, err := r.Cookie(stateCookie)
	if err == nil {
		err = s.open(stateCookie, c.Value, &st)
	}
	h.setCookie(w, stateCookie, "", -1)
	switch {
	case err != nil || !h.now().Before(st.Expires):
		h.say(w, http.StatusBadRequest, session{}, message{Heading: "Sign-in expired",
			Text: "This sign-in was not started in this browser, or took too long.", Link: "Sign in again", LinkTo: "/login"})
		return
	case q.Get("error") != "":
		h.say(w, http.StatusForbidden, session{}, message{Heading: "GitHub did not sign you in",
			Text: q.Get("error") + ": " + q.Get("error_description"), Link: "Try again", LinkTo: "/login"})
		return
	case q.Get("state") == "" || subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(st.State)) != 1:
		h.say(w, http.StatusBadRequest, session{}, message{Heading: "Sign-in refused",
			Text: "The state GitHub sent back does not match the one this browser was given.", Link: "Sign in again", LinkTo: "/login"})
		return
	}
	token, err := h.gh.Exchange(r.Context(), q.Get("code"), h.callbackURL())
	if errors.Is(err, errCodeRefused) {
		h.say(w, http.StatusBadRequest, session{}, message{Heading: "Sign-in expired",
			Text: "GitHub did not accept the sign-in code: it works once, for 10 minutes, and this page may have been reloaded or left open.",
			Link: "Sign in again", LinkTo: "/login?" + url.Values{"next": {st.Next}}.Encode()})
		return
	}
	if err != nil {
		h.gitHubDown(w, session{}, err)
		return
	}
	login, err := h.gh.User(r.Context(), token)
	if err != nil {
		h.gitHubDown(w, session{}, err)
		return
	}
	sealed, err := s.seal(sessionCookie, session{Login: login, Token: token, Expires: h.now().Add(sessionLifetime)})
	if err != nil {
		h.internal(w, session{}, "seal the session", err)
		return
	}
	h.setCookie(w, sessionCookie, sealed, int(sessionLifetime.Seconds()))
	http.Redirect(w, r, st.Next, http.StatusSeeOther)
}

type signOutBody struct {
	CSRF string
}

// logoutPage is GET /logout: a page with the sign-out button, not the
// sign-out itself, which any page's <img src=".../logout"> could do.
func (h *handler) logoutPage(w http.ResponseWriter, r *http.Request) {
	ss, ok := h.signedIn(r)
	if !ok {
		h.say(w, http.StatusOK, session{}, message{Heading: "Signed out",
			Text: "You are not signed in to ripcord in this browser.", Link: "Sign in", LinkTo: "/login"})
		return
	}
	tok, err := csrfToken(h.app().ClientSecret, ss, logoutAction)
	if err != nil {
		h.internal(w, ss, "make the sign-out form", err)
		return
	}
	h.render(w, http.StatusOK, "signout", page{Title: "Sign out", ss: ss, Body: signOutBody{CSRF: tok}})
}

// logout is POST /logout: it forgets the session in this browser, when the
// form carries the session's sign-out token (so another site cannot post
// it for someone). Without a session there is nothing to forget or to
// protect, and the cookie is cleared all the same. The token itself stays
// valid on GitHub until it expires or the user revokes the App's
// authorisation.
func (h *handler) logout(w http.ResponseWriter, r *http.Request) {
	ss, ok := h.signedIn(r)
	if !ok {
		h.setCookie(w, sessionCookie, "", -1)
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil || !validCSRF(h.app().ClientSecret, ss, logoutAction, r.PostForm.Get(csrfField)) {
		h.say(w, http.StatusForbidden, ss, message{Heading: "Sign-out refused",
			Text: "This sign-out form did not come from your page here, or you signed in again since it was shown, " +
				"so you are still signed in. To sign out, use the Sign out button at the top of this page.",
			Link: "Sign out", LinkTo: "/logout"})
		return
	}
	h.setCookie(w, sessionCookie, "", -1)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (h *handler) setCookie(w http.ResponseWriter, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: strings.HasPrefix(h.publicURL, "https://")})
}

// localPath keeps a return address on this server: a path, never another
// host ("//evil.example" or "/\evil.example" are hosts to browsers). A
// backslash anywhere is refused, not only at the start: http.Redirect
// cleans the path, and "/./\evil.example" comes out of it as
// "/\evil.example". The pages' own addresses escape theirs (%5C).
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.Contains(next, `\`) {
		return "/"
	}
	if u, err := url.Parse(next); err != nil || u.Host != "" || u.Scheme != "" {
		return "/"
	}
	return next
}

var noOAuthClient = message{Heading: "Sign-in is not set up",
	Text: "Signing in uses the GitHub App's OAuth client (its client id and secret), which this server does not know. " +
		"Register the App through the set-up page so ripcord learns them.", Link: "Set up", LinkTo: "/setup"}
