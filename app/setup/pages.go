package setup

import (
	"bytes"
	"html/template"
	"net/http"
	"strconv"

	"github.com/ripcord/ripcord/app/pipeline"
)

type registerView struct {
	Public, Hook, WebURL             string
	Permissions                      []Permission
	Events                           []string
	PersonalAction, PersonalManifest string
	Org, OrgError                    string
	OrgAction, OrgManifest           string
	// Secret: a webhook secret is configured, so webhooks are stored;
	// without one every delivery is refused until the App is registered.
	Secret bool
	// Token is the set-up token the page was opened with: the
	// organisation's form sends it again.
	Token string
}

type statusView struct {
	ID         int64
	Slug       string
	InstallURL string // empty when the App's page is not known (configured by settings)
	Settings   string // where GitHub lists the admin's Apps
	Hook       string
	// Restart: the App was registered through another replica and is not
	// in use here until this one restarts.
	Restart bool
	// Refused: the page answers a callback that came once an App was
	// configured. GitHub created a second App before sending the admin
	// back, and that one is not used.
	Refused bool
	// Installation is the installation GitHub has just sent the admin
	// back from (setup_action install or update); 0 when none.
	Installation int64
	// Recorded is how many of its repositories ripcord has recorded from
	// GitHub's installation webhook: 0 while it has not arrived.
	Recorded int
	// Unknown: the database could not say.
	Unknown bool
	// Requested: GitHub asked an organisation owner to approve the
	// installation (setup_action request).
	Requested bool
}

func configuredView(app pipeline.AppIdentity, public string) statusView {
	v := statusView{ID: app.ID, Slug: app.Slug, Hook: public + HookPath, Settings: app.WebURL + "settings/apps"}
	if app.HTMLURL != "" {
		v.InstallURL = app.HTMLURL + "/installations/new"
	}
	return v
}

// storedView is the status of an App stored by another replica.
func storedView(c Credentials, app pipeline.AppIdentity, public string) statusView {
	app.ID, app.Slug, app.HTMLURL = c.AppID, c.Slug, c.HTMLURL
	v := configuredView(app, public)
	v.Restart = true
	return v
}

type errorView struct{ Title, Message string }

const layout = `{{define "top"}}<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ripcord set-up</title>
<meta name="referrer" content="no-referrer">
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem}
code{background:#f3f3f3;padding:0 .25rem}table{border-collapse:collapse}td,th{padding:.2rem .6rem;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}
button{font:inherit;padding:.4rem 1rem}.error{color:#a40000}</style>
</head><body><h1>ripcord set-up</h1>{{end}}
{{define "bottom"}}<p><a href="/setup">Set-up page</a></p></body></html>{{end}}`

var registerPage = template.Must(template.New("register").Parse(layout + `{{template "top"}}
<p><strong>Set-up is not finished:</strong> ripcord has no GitHub App yet, so it cannot act on GitHub{{if .Secret}} (it stores the webhooks signed with its configured secret){{else}}, and with no webhook secret configured it refuses every webhook (HTTP 401){{end}}. Register one on GitHub: GitHub creates it with the settings below,
ripcord stores its key (encrypted) and starts using it at once, and you go on to install it on your repositories.</p>
<h2>On your personal account</h2>
<form method="post" action="{{.PersonalAction}}">
<input type="hidden" name="manifest" value="{{.PersonalManifest}}">
<button type="submit">Register on GitHub</button>
</form>
<h2>On an organisation</h2>
{{if .OrgAction}}
<form method="post" action="{{.OrgAction}}" id="register-org">
<input type="hidden" name="manifest" value="{{.OrgManifest}}">
<button type="submit">Register on GitHub for {{.Org}}</button>
</form>
<p>Another organisation:</p>
{{end}}
<form method="get" action="/setup">
<input type="hidden" name="token" value="{{.Token}}">
<label>Organisation name <input name="org" value="{{.Org}}" required></label>
<button type="submit">Continue</button>
{{if .OrgError}}<p class="error">{{.OrgError}}</p>{{end}}
</form>
<h2>What the App will ask for</h2>
<table><tr><th>permission</th><th>access</th><th>why</th></tr>
{{range .Permissions}}<tr><td><code>{{.Name}}</code></td><td>{{.Access}}</td><td>{{.Why}}</td></tr>
{{end}}</table>
<p>Events: {{range $i, $e := .Events}}{{if $i}}, {{end}}<code>{{$e}}</code>{{end}}.</p>
<p>Webhook URL: <code>{{.Hook}}</code> (GitHub must reach it: this is the <code>public_url</code> setting).
GitHub: <code>{{.WebURL}}</code>.</p>
{{template "bottom"}}`))

var configuredPage = template.Must(template.New("configured").Parse(layout + `{{template "top"}}
{{if .Refused}}<p class="error">This server has a GitHub App already, so the App GitHub has just created for this registration is not used and was not stored.
Delete that one on GitHub (among <a href="{{.Settings}}">your GitHub Apps</a>, or your organisation's), so that no unused App points at this server;
keep App <code>{{.ID}}</code>{{if .Slug}} (<code>{{.Slug}}</code>){{end}}, the one this server uses.</p>
{{end}}<p>The GitHub App is configured: App id <code>{{.ID}}</code>{{if .Slug}} (<code>{{.Slug}}</code>){{end}}.
Webhooks are received at <code>{{.Hook}}</code>.</p>
{{if .Restart}}<p>It was registered through another ripcord server sharing this database: restart this one to use it.</p>{{end}}
{{if .Installation}}<h2>Installed</h2>
<p>GitHub has installed the App (installation <code>{{.Installation}}</code>).
{{if .Unknown}}ripcord cannot tell now whether GitHub's webhook about it arrived: reload this page in a moment.
{{else if .Recorded}}ripcord has received GitHub's webhook about it and recorded {{.Recorded}} {{if eq .Recorded 1}}repository{{else}}repositories{{end}}: webhooks reach <code>{{.Hook}}</code>.
{{else}}ripcord has not received GitHub's webhook about it yet. GitHub sends it at once to <code>{{.Hook}}</code>: reload this page in a few seconds.
If it still says so, open the App's settings on GitHub (among <a href="{{.Settings}}">your GitHub Apps</a>, or your organisation's), <strong>Advanced</strong>, <strong>Recent Deliveries</strong>:
each delivery shows ripcord's answer (202 when it was taken; a connection error or timeout means GitHub cannot reach that address, the <code>public_url</code> setting; 401 means the webhook secret differs).
{{end}}</p>
<p>Next, commit a <code>.github/ripcord.yml</code> to each repository ripcord should protect (<code>ripcord validate</code> checks one before you commit it).
To add or remove repositories later, use <a href="{{if .InstallURL}}{{.InstallURL}}{{else}}{{.Settings}}{{end}}">the App's installation settings</a>.</p>
{{else if .Requested}}<h2>Installation requested</h2>
<p>GitHub has asked an owner of the organisation to approve the App's installation. Once they approve it, GitHub sends ripcord a webhook and the App works there:
then commit a <code>.github/ripcord.yml</code> to each repository ripcord should protect.</p>
{{else if .InstallURL}}<p><a href="{{.InstallURL}}">Install the App</a> on the repositories ripcord should protect, then commit a <code>.github/ripcord.yml</code>.</p>
{{else}}<p>Install it from its page among <a href="{{.Settings}}">your GitHub Apps</a>, then commit a <code>.github/ripcord.yml</code>.</p>{{end}}
{{template "bottom"}}`))

var errorPage = template.Must(template.New("error").Parse(layout + `{{template "top"}}
<h2 class="error">{{.Title}}</h2>
<p>{{.Message}}</p>
{{template "bottom"}}`))

func render(w http.ResponseWriter, status int, t *template.Template, v any) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, v); err != nil {
		http.Error(w, "render "+t.Name()+" page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	// A page holds a one-time state; a callback URL holds a one-time code.
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	// No other site may frame the page and steer a click on its Register
	// button; the forms post to GitHub, so form-action stays open.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func renderError(w http.ResponseWriter, status int, title, msg string) {
	render(w, status, errorPage, errorView{Title: title, Message: msg})
}
