package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/ripcord/ripcord/records"
)

func runReleases(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: ripcord releases list|show ID|audit ID [flags]")
		return 2
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("ripcord releases "+sub, flag.ContinueOnError)
	client := clientFlags(fs, "RIPCORD_API_TOKEN", "the server's api_token")
	asJSON := fs.Bool("json", false, "print the server's JSON instead of a table")
	app := fs.String("app", "", "list: only this app")
	env := fs.String("environment", "", "list: only this environment")
	cluster := fs.String("cluster", "", "list: only this cluster")
	state := fs.String("state", "", "list: only releases in this state")
	limit := fs.Int("limit", 50, "list, audit: at most this many (1-1000)")
	if err := fs.Parse(args); err != nil {
		return 2
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
		var out struct{ Releases []records.Record }
		return finish(c.do(ctx, "GET", "/api/v1/releases?"+q.Encode(), nil, &out), *asJSON, out, func() { printReleases(out.Releases) })
	case "show", "audit":
		if fs.NArg() != 1 {
			fmt.Fprintf(os.Stderr, "usage: ripcord releases %s RELEASE_ID\n", sub)
			return 2
		}
		path := "/api/v1/releases/" + url.PathEscape(fs.Arg(0))
		if sub == "show" {
			var rec records.Record
			return finish(c.do(ctx, "GET", path, nil, &rec), *asJSON, rec, func() { printReleases([]records.Record{rec}) })
		}
		var out struct{ Events []records.AuditEvent }
		return finish(c.do(ctx, "GET", path+"/audit?limit="+strconv.Itoa(*limit), nil, &out), *asJSON, out, func() { printAudit(out.Events) })
	}
	fmt.Fprintf(os.Stderr, "ripcord releases: unknown subcommand %q (list, show, audit)\n", sub)
	return 2
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
