package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/ripcord/ripcord/app/rolloutflow"
)

// runRollout is `ripcord rollout start|status|list|approve|abort`, talking
// to /api/v1/rollouts.
func runRollout(args []string) int {
	if len(args) == 0 || isHelp(args[0]) {
		w, code := helpOut(args)
		writePage(w, "ripcord rollout start|status|list|approve|abort [flags]",
			"Rolls releases out in waves, where the environment's .github/ripcord.yml has targets and a rollout "+
				"section: starts a rollout, shows one, lists an environment's, or approves or aborts one.", []string{
				"ripcord rollout start --app checkout --environment prod --version v42",
				"ripcord rollout list --app checkout --environment prod --unfinished",
				"ripcord rollout approve --user octocat ro-3f9a1c2b7d",
			})
		fmt.Fprintln(w, "\nRun 'ripcord rollout start -h' (or status, list, approve, abort) for its flags.")
		return code
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "start":
		return rolloutStart(args)
	case "status":
		return rolloutStatus(args)
	case "list":
		return rolloutList(args)
	case "approve":
		return rolloutVote(args)
	case "abort":
		return rolloutAbort(args)
	}
	fmt.Fprintf(os.Stderr, "ripcord rollout: unknown subcommand %q (start, status, list, approve, abort)\n", sub)
	return 2
}

func rolloutStart(args []string) int {
	fs := newFlags("ripcord rollout start", "--app APP --environment ENV --version VERSION [flags]",
		"Opens the release of a version for an app's environment and starts its rollout in waves "+
			"(POST /api/v1/rollouts); the environment's .github/ripcord.yml must have targets and a rollout section. "+
			"It prints the rollout's status. A start the server refuses opens no release: send it again "+
			"once the cause is gone.",
		"ripcord rollout start --app checkout --environment prod --version v42",
		"ripcord rollout start --app checkout --environment prod --version v43 --repository acme/checkout --cluster prod-eu --author octocat")
	client := clientFlags(fs, "RIPCORD_API_TOKEN", "the server's api_token")
	repo := fs.String("repository", "", "the app's repository, owner/name (default: the one its newest release names)")
	app := fs.String("app", "", "the app (required)")
	env := fs.String("environment", "", "the environment, whose config has rollout: (required)")
	version := fs.String("version", "", "the version to roll out (required)")
	cluster := fs.String("cluster", "", "the cluster of the release record (default: the newest release's)")
	release := fs.String("release-id", "", "the release id (default <app>-<version>:<cluster>/<environment>)")
	author := fs.String("author", "", "GitHub login of who releases: it may not approve the rollout")
	override := fs.Bool("freeze-override", false, "let the release through freeze windows (recorded in the audit)")
	asJSON := fs.Bool("json", false, "print the server's JSON")
	if code, stop := parse(fs, args); stop {
		return code
	}
	if code, stop := noArgs(fs); stop {
		return code
	}
	if code, stop := required("ripcord rollout start", [2]string{"app", *app}, [2]string{"environment", *env}, [2]string{"version", *version}); stop {
		return code
	}
	c, err := client()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ripcord rollout start:", err)
		return 2
	}
	body, _ := json.Marshal(map[string]any{"repository": *repo, "app": *app, "environment": *env, "version": *version,
		"cluster": *cluster, "release_id": *release, "author": *author, "freeze_override": *override})
	var out rolloutflow.StatusJSON
	err = c.do(context.Background(), "POST", "/api/v1/rollouts", body, &out)
	return finish(err, *asJSON, out, func() { printRollout(os.Stdout, out) })
}

func rolloutStatus(args []string) int {
	fs := newFlags("ripcord rollout status", "ROLLOUT_ID | --release-id RELEASE_ID [flags]",
		"Shows a rollout, found by its id or by its release's: its status, its stages with their state "+
			"and gate, what it is paused by, and its rollback.",
		"ripcord rollout status ro-3f9a1c2b7d",
		"ripcord rollout status --release-id checkout-v42:prod-eu/prod --json")
	client := clientFlags(fs, "RIPCORD_API_TOKEN", "the server's api_token")
	release := fs.String("release-id", "", "find the rollout by its release instead of its id")
	asJSON := fs.Bool("json", false, "print the server's JSON")
	if code, stop := parse(fs, args); stop {
		return code
	}
	// The command line is checked before the token, as the other commands
	// do: a missing id is a usage error whatever the environment holds.
	if *release != "" {
		// An id beside --release-id would be ignored: which did they mean?
		if code, stop := noArgs(fs); stop {
			return code
		}
	} else if code, stop := oneArg(fs, "ROLLOUT_ID (or --release-id)", "ripcord rollout status ROLLOUT_ID | --release-id RELEASE_ID"); stop {
		return code
	}
	c, err := client()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ripcord rollout status:", err)
		return 2
	}
	ctx := context.Background()
	if *release != "" {
		var out struct {
			Rollouts []rolloutflow.StatusJSON `json:"rollouts"`
		}
		err = c.do(ctx, "GET", "/api/v1/rollouts?release_id="+url.QueryEscape(*release), nil, &out)
		if err == nil && len(out.Rollouts) == 0 {
			fmt.Fprintf(os.Stderr, "ripcord rollout status: release %s has no rollout\n", *release)
			return 1
		}
		return finish(err, *asJSON, out, func() { printRollout(os.Stdout, out.Rollouts[0]) })
	}
	var out rolloutflow.StatusJSON
	err = c.do(ctx, "GET", "/api/v1/rollouts/"+url.PathEscape(fs.Arg(0)), nil, &out)
	return finish(err, *asJSON, out, func() { printRollout(os.Stdout, out) })
}

func rolloutList(args []string) int {
	fs := newFlags("ripcord rollout list", "--app APP --environment ENV [flags]",
		"Lists an environment's rollouts, newest first; with --unfinished only those that have not "+
			"ended: the one rolling out and those queued behind it.",
		"ripcord rollout list --app checkout --environment prod",
		"ripcord rollout list --app checkout --environment prod --unfinished")
	client := clientFlags(fs, "RIPCORD_API_TOKEN", "the server's api_token")
	app := fs.String("app", "", "the app (required)")
	env := fs.String("environment", "", "the environment (required)")
	unfinished := fs.Bool("unfinished", false, "only rollouts that have not ended: the one rolling out and those queued behind it")
	limit := fs.Int("limit", 20, "at most this many, newest first (1-100)")
	asJSON := fs.Bool("json", false, "print the server's JSON")
	if code, stop := parse(fs, args); stop {
		return code
	}
	if code, stop := noArgs(fs); stop {
		return code
	}
	if code, stop := required("ripcord rollout list", [2]string{"app", *app}, [2]string{"environment", *env}); stop {
		return code
	}
	if code, stop := flagRange(fs, "limit", 1, 100); stop {
		return code
	}
	c, err := client()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ripcord rollout list:", err)
		return 2
	}
	q := url.Values{"app": {*app}, "environment": {*env}, "limit": {fmt.Sprint(*limit)}}
	if *unfinished {
		q.Set("unfinished", "true")
	}
	var out struct {
		Rollouts []rolloutflow.StatusJSON `json:"rollouts"`
	}
	err = c.do(context.Background(), "GET", "/api/v1/rollouts?"+q.Encode(), nil, &out)
	return finish(err, *asJSON, out, func() { printRollouts(os.Stdout, out.Rollouts) })
}

// printRollouts writes the list rs for a person, a line a rollout: why
// each waits too (paused, or a GitHub that does not answer for a batch),
// as printRollout says it of one.
func printRollouts(w io.Writer, rs []rolloutflow.StatusJSON) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLLOUT\tRELEASE\tVERSION\tSTATUS\tSTAGES\tSTAGE\tPAUSED BY\tWAITING FOR GITHUB")
	for _, s := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.ReleaseID, s.Version, s.Rollout.Status,
			s.RolloutProgress, s.Rollout.Stage, s.Rollout.Paused, s.Waiting)
	}
	_ = tw.Flush()
}

func rolloutVote(args []string) int {
	fs := newFlags("ripcord rollout approve", "ROLLOUT_ID --user LOGIN [--reject] [flags]",
		"Approves a rollout that waits for an approval (paused-approval, or paused-hold behind a failed "+
			"one), in the name of --user, whose permission on the repository must reach approvals.permission; "+
			"the release's author cannot approve. --reject stops the rollout instead, and on_failure applies.",
		"ripcord rollout approve --user octocat ro-3f9a1c2b7d",
		`ripcord rollout approve --user octocat --reject --comment "error rate up in eu-1" ro-3f9a1c2b7d`)
	client := clientFlags(fs, "RIPCORD_API_TOKEN", "the server's api_token")
	user := fs.String("user", "", "GitHub login of who approves (required; the release's author cannot)")
	reject := fs.Bool("reject", false, "reject instead: the rollout stops and on_failure applies")
	comment := fs.String("comment", "", "a note for the audit trail")
	if code, stop := parse(fs, args); stop {
		return code
	}
	if code, stop := oneArg(fs, "ROLLOUT_ID", "ripcord rollout approve ROLLOUT_ID --user LOGIN [--reject]"); stop {
		return code
	}
	if strings.TrimSpace(*user) == "" {
		fmt.Fprintln(os.Stderr, "ripcord rollout approve: --user is required: the GitHub login of who approves "+
			"(the api token does not name one; their permission on the repository is checked, and the release's author cannot approve)")
		return 2
	}
	body, _ := json.Marshal(map[string]any{"user": *user, "reject": *reject, "comment": *comment})
	return rolloutPost(client, "/api/v1/rollouts/"+url.PathEscape(fs.Arg(0))+"/approve", body)
}

func rolloutAbort(args []string) int {
	fs := newFlags("ripcord rollout abort", "ROLLOUT_ID --user LOGIN [--reason WHY] [flags]",
		"Stops a rollout: no batch is dispatched after the abort, and on_failure applies to what was "+
			"deployed. --user names who stopped it, for the audit trail.",
		`ripcord rollout abort --user octocat --reason "a fix is on its way" ro-3f9a1c2b7d`)
	client := clientFlags(fs, "RIPCORD_API_TOKEN", "the server's api_token")
	user := fs.String("user", "", "GitHub login of who aborts (required)")
	reason := fs.String("reason", "", "why")
	if code, stop := parse(fs, args); stop {
		return code
	}
	if code, stop := oneArg(fs, "ROLLOUT_ID", "ripcord rollout abort ROLLOUT_ID --user LOGIN [--reason WHY]"); stop {
		return code
	}
	if strings.TrimSpace(*user) == "" {
		fmt.Fprintln(os.Stderr, "ripcord rollout abort: --user is required: the GitHub login of who aborts "+
			"(the api token does not name one; the rollout's audit trail says who stopped it)")
		return 2
	}
	body, _ := json.Marshal(map[string]any{"user": *user, "reason": *reason})
	return rolloutPost(client, "/api/v1/rollouts/"+url.PathEscape(fs.Arg(0))+"/abort", body)
}

func rolloutPost(client func() (*apiClient, error), path string, body []byte) int {
	c, err := client()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ripcord rollout:", err)
		return 2
	}
	var out struct {
		Message string `json:"message"`
	}
	err = c.do(context.Background(), "POST", path, body, &out)
	return finish(err, false, out, func() { fmt.Println(out.Message) })
}

// printRollout writes the status s for a person: the rollout, why it
// waits (paused, or a GitHub that does not answer for a batch), its stages
// and its rollback.
func printRollout(w io.Writer, s rolloutflow.StatusJSON) {
	fmt.Fprintf(w, "rollout %s of %s (%s %s/%s): %s, %s stages passed, on_failure %s\n", s.ID, s.ReleaseID, s.Version,
		s.App, s.Environment, s.Rollout.Status, s.RolloutProgress, s.Rollout.OnFailure)
	if s.Rollout.Paused != "" {
		fmt.Fprintln(w, "paused by", s.Rollout.Paused)
	}
	if s.Waiting != "" {
		fmt.Fprintln(w, "waiting for GitHub", s.Waiting)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STAGE\tWAVE\tSTATE\tGATE")
	for _, st := range s.Rollout.Stages {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", st.Name, st.Wave, st.State, st.Gate)
	}
	_ = tw.Flush()
	if rb := s.Rollout.Rollback; rb != nil {
		fmt.Fprintf(w, "rollback %s: %s %s\n", rb.Status, strings.Join(rb.Stages, ", "), rb.Reason)
	}
}
