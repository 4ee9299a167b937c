package webui

import (
	"bytes"
	"embed"
	"html/template"
	"net/http"
	"net/url"
	"time"
)

//go:embed templates
var files embed.FS

// pageNames are the templates under templates/, each rendered inside
// layout.html.
var pageNames = []string{"signin", "signout", "releases", "release", "message"}

var pages = parsePages()

var css = template.CSS(mustRead("templates/style.css"))

func mustRead(name string) string {
	b, err := files.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

var funcs = template.FuncMap{
	"stamp":   func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"rfc3339": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"inc":     func(i int) int { return i + 1 },
	// releasePath escapes the id as one path segment: release ids hold
	// slashes ("r3:prod-eu/prod") that would otherwise split it.
	"releasePath": func(id string) string { return "/releases/" + url.PathEscape(id) },
}

func parsePages() map[string]*template.Template {
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		out[name] = template.Must(template.New("layout.html").Funcs(funcs).
			ParseFS(files, "templates/layout.html", "templates/"+name+".html"))
	}
	return out
}

// page is what every template gets: the layout's parts and the page's own.
type page struct {
	Title string
	// ss is who is signed in (zero when no one is): render sets Login and
	// SignOut from it.
	ss      session
	Login   string
	SignOut string // the sign-out form's CSRF token
	CSS     template.CSS
	Flash   *flash // the answer to the form that led here; nil when none
	Body    any
}

// message is the body of the message page (errors, refusals).
type message struct {
	Heading string
	Text    string
	Link    string
	LinkTo  string
}

// render executes into a buffer first, so a template error becomes a clean
// 500 rather than half a page.
func (h *handler) render(w http.ResponseWriter, status int, name string, p page) {
	p.CSS = css
	p.Login, p.SignOut = p.ss.Login, ""
	if p.Login != "" {
		// No token (no client secret) draws a form the server refuses,
		// which says what to do: better than no way out.
		p.SignOut, _ = csrfToken(h.app().ClientSecret, p.ss, logoutAction)
	}
	var buf bytes.Buffer
	if err := pages[name].Execute(&buf, p); err != nil {
		h.log.Error("render page", "page", name, "err", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func (h *handler) say(w http.ResponseWriter, status int, ss session, m message) {
	h.render(w, status, "message", page{Title: m.Heading, ss: ss, Body: m})
}
