package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ripcord/ripcord/records"
)

// releasesPages are what each page of `ripcord releases` says besides its
// flags: "" is the command's own.
var releasesPages = map[string]struct {
	about    string
	examples []string
}{
	"": {"Reads the server's release records: lists them, shows one, or prints one's audit trail.", []string{
		"ripcord releases list --app checkout --environment prod",
		"ripcord releases show checkout-v42:prod-eu/prod",
		"ripcord releases audit checkout-v42:prod-eu/prod",
	}},
	"list": {"Lists the server's releases, newest first, as a table (--json prints the server's JSON), " +
		"all of them or those of an app, environment, cluster or state.", []string{
		"ripcord releases list --app checkout --environment prod",
		"ripcord releases list --state degraded --limit 10 --json",
	}},
	"show": {"Shows one release: its app, environment, cluster, kind, state and image, when it was " +
		"created and when it became healthy.", []string{
		"ripcord releases show checkout-v42:prod-eu/prod",
		"ripcord releases show checkout-v42:prod-eu/prod --json",
	}},
	"audit": {"Prints a release's audit trail, oldest first: every fact, state change, drift, stall " +
		"and rollback, with its reason.", []string{
		"ripcord releases audit checkout-v42:prod-eu/prod",
		"ripcord releases audit checkout-v42:prod-eu/prod --limit 500 --json",
	}},
}

func runReleases(args []string) int {
	if len(args) == 0 || isHelp(args[0]) {
		w, code := helpOut(args)
		page := releasesPages[""]
		writePage(w, "ripcord releases list [flags] | show RELEASE_ID [flags] | audit RELEASE_ID [flags]", page.about, page.examples)
		fmt.Fprintln(w, "\nRun 'ripcord releases list -h' (or show, audit) for its flags.")
		return code
	}
	sub, args := args[0], args[1:]
	if sub != "list" && sub != "show" && sub != "audit" {
		fmt.Fprintf(os.Stderr, "ripcord releases: unknown subcommand %q (list, show, audit)\n", sub)
		return 2
	}
	synopsis := "RELEASE_ID [flags]"
	if sub == "list" {
		synopsis = "[flags]"
	}
	page := releasesPages[sub]
	fs := newFlags("ripcord releases "+sub, synopsis, page.about, page.examples...)
	client := clientFlags(fs, "RIPCORD_API_TOKEN", "the server's api_token")
	asJSON := fs.Bool("json", false, "print the server's JSON instead of a table")
	var app, env, cluster, state *string
	var limit *int
	switch sub {
	case "list":
		app = fs.String("app", "", "only this app")
		env = fs.String("environment", "", "only this environment")
		cluster = fs.String("cluster", "", "only this cluster")
		state = fs.String("state", "", "only releases in this state: "+stateNames())
		limit = fs.Int("limit", 50, "at most this many releases (1-1000)")
	case "audit":
		limit = fs.Int("limit", 50, "at most this many events (1-1000)")
	}
	if code, stop := parse(fs, args); stop {
		return code
	}
	if sub == "list" {
		if code, stop := noArgs(fs); stop {
			return code
		}
	} else if code, stop := oneArg(fs, "RELEASE_ID", "ripcord releases "+sub+" RELEASE_ID [flags]"); stop {
		return code
	}
	if limit != nil {
		if code, stop := flagRange(fs, "limit", 1, 1000); stop {
			return code
		}
	}
	c, err := client()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ripcord releases:", err)
		return 2
	}
	ctx := context.Background()
	switch sub {
	case "list":
		q := url.Values{"limit": {strconv.Itoa(*limit)}}
		for k, v := range map[string]string{"app": *app, "environment": *env, "cluster": *cluster, "state": *state} {
			if v != "" {
				q.Set(k, v)
			}
		}
		var out struct {
			Releases []records.Record `json:"releases"`
		}
		return finish(c.do(ctx, "GET", "/api/v1/releases?"+q.Encode(), nil, &out), *asJSON, out, func() { printReleases(out.Releases) })
	case "show":
		var rec records.Record
		return finish(c.do(ctx, "GET", "/api/v1/releases/"+url.PathEscape(fs.Arg(0)), nil, &rec), *asJSON, rec, func() { printReleases([]records.Record{rec}) })
	}
	var out struct {
		Events []records.AuditEvent `json:"events"`
	}
	path := "/api/v1/releases/" + url.PathEscape(fs.Arg(0)) + "/audit?limit=" + strconv.Itoa(*limit)
	return finish(c.do(ctx, "GET", path, nil, &out), *asJSON, out, func() { printAudit(out.Events) })
}

// finish prints the answer as JSON or with pretty, or the error.
func finish(err error, asJSON bool, v any, pretty func()) int {
	if err != nil {
		fmt.Fprintln(os.Stderr, "ripcord:", err)
		return 1
	}
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(v)
		return 0
	}
	pretty()
	return 0
}

func printReleases(rs []records.Record) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RELEASE\tAPP\tENVIRONMENT\tCLUSTER\tKIND\tSTATE\tIMAGE\tCREATED\tHEALTHY")
	for _, r := range rs {
		healthy := "-"
		if r.HealthyAt != nil {
			healthy = r.HealthyAt.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ReleaseID, r.App, r.Environment, r.Cluster,
			r.Kind, r.State, r.Image, r.CreatedAt.Format(time.RFC3339), healthy)
	}
	tw.Flush()
}

func printAudit(events []records.AuditEvent) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tEVENT\tRELEASE\tMESSAGE")
	for _, e := range events {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.At.Format(time.RFC3339), e.Type, e.ReleaseID, e.Message)
	}
	tw.Flush()
}

// stateNames lists the states --state takes, which its help named none of.
func stateNames() string {
	names := make([]string, len(records.States))
	for i, st := range records.States {
		names[i] = string(st)
	}
	return strings.Join(names, ", ")
}
