package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"
)

// runFact posts a fact to /api/v1/facts/{cluster} from a file (or stdin) or
// from flags, retrying while the server is unreachable or answers 5xx.
func runFact(args []string) int {
	fs := newFlags("ripcord fact", "--cluster NAME (--file FILE | --source S --namespace N --name W --phase P ...) [flags]",
		"Posts facts to the server for a cluster (POST /api/v1/facts/CLUSTER), as the cluster agent does, "+
			"with the cluster's token: from a JSON file (--file, or --file - for stdin) holding one fact or {\"facts\": [...]}, "+
			"or one workload's fact typed from the flags. Connection errors and 5xx answers are retried. "+
			"It prints the server's answer, whose outcome is applied, duplicate, ignored, drift or opened.",
		"ripcord fact --cluster prod-eu --file fact.json",
		"ripcord fact --cluster prod-eu --namespace shop --name checkout --uid 6f1e2c --generation 3 --phase Healthy --release-id checkout-v42:prod-eu/prod --image registry.example/shop/checkout:v42")
	client := clientFlags(fs, "RIPCORD_CLUSTER_TOKEN", "the cluster's token")
	file := fs.String("file", "", "JSON file with one fact or {\"facts\": [...]}; - reads stdin")
	str, num, yes := map[string]*string{}, map[string]*int64{}, map[string]*bool{}
	for _, ff := range factFlags {
		switch ff.kind {
		case flagNumber:
			num[ff.flag] = fs.Int64(ff.flag, 0, ff.help())
		case flagBool:
			yes[ff.flag] = fs.Bool(ff.flag, false, ff.help())
		default:
			str[ff.flag] = fs.String(ff.flag, "", ff.help())
		}
	}
	cluster := str["cluster"]
	if code, stop := parse(fs, args); stop {
		return code
	}
	if code, stop := noArgs(fs); stop {
		return code
	}
	if *cluster == "" {
		fmt.Fprintln(os.Stderr, "ripcord fact: --cluster is required")
		return 2
	}
	// A fact from --file carries its own fields: a field flag beside it
	// would be dropped without a word, and the server would apply the
	// file's value as if the flag had been heard.
	if *file != "" {
		var fields []string
		fs.Visit(func(fl *flag.Flag) {
			switch fl.Name {
			case "file", "cluster", "server", "token":
			default:
				fields = append(fields, "--"+fl.Name)
			}
		})
		if len(fields) > 0 {
			fmt.Fprintf(os.Stderr, "ripcord fact: %s cannot be used with --file, whose fact carries its own fields: "+
				"put them in the file, or leave out --file to type the fact from flags\n", strings.Join(fields, ", "))
			return 2
		}
	}
	// A task fact's fields (repository, workflow_run_id, status, app, ...)
	// have no flags: sent, it was refused by the server with a list of
	// fields the user had no way to type.
	if *file == "" && *str["source"] == "task" {
		fmt.Fprintln(os.Stderr, "ripcord fact: a task fact (--source task) needs --file: its fields "+
			"(repository, workflow_run_id, status, app, environment, ...) have no flags; write it as JSON")
		return 2
	}
	if code, stop := notNegative(fs, "generation", "observed-generation", "step", "step-count"); stop {
		return code
	}
	c, err := client()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ripcord fact:", err)
		return 2
	}
	var body []byte
	if *file != "" {
		body, err = readInput(*file)
	} else {
		if *num["observed-generation"] == 0 {
			*num["observed-generation"] = *num["generation"]
		}
		fact := map[string]any{"observed_at": time.Now().UTC().Format(time.RFC3339Nano)}
		for _, ff := range factFlags {
			switch {
			case ff.kind == flagNumber:
				fact[ff.field] = *num[ff.flag]
			case ff.kind == flagBool:
				fact[ff.field] = *yes[ff.flag]
			case ff.field == "images":
				if *str[ff.flag] != "" {
					fact[ff.field] = []string{*str[ff.flag]}
				}
			default:
				fact[ff.field] = *str[ff.flag]
			}
		}
		fact["source"] = firstOf(*str["source"], "deployment")
		body, err = json.Marshal(fact)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ripcord fact:", err)
		return 2
	}
	var out json.RawMessage
	if err := c.do(context.Background(), "POST", "/api/v1/facts/"+url.PathEscape(*cluster), body, &out); err != nil {
		// A refusal names the fact's JSON fields; a fact typed from flags
		// has the flags' names, which a file's fact does not.
		var ae *apiError
		if *file == "" && errors.As(err, &ae) {
			ae.rename = factFlagOf
		}
		fmt.Fprintln(os.Stderr, "ripcord fact:", err)
		return 1
	}
	fmt.Println(string(out))
	return 0
}

func readInput(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(name)
}

// factFlag is a flag of a fact typed from flags and the fact's JSON field
// it fills. The -h page names the field after the flag, and a refusal
// that names the field is said with the flag, both from factFlags, so
// that the page and the message never disagree.
type factFlag struct {
	flag, field string
	kind        flagKind
	// about is what the page says besides the field: for source and
	// phase the values the server accepts, so that a fact typed from the
	// flags is not refused for a value the page did not name.
	about string
}

type flagKind int

const (
	flagString flagKind = iota
	flagNumber
	flagBool
)

var factFlags = []factFlag{
	{flag: "cluster", field: "cluster", about: "the cluster the fact is from, whose URL it is posted to (required)"},
	{flag: "source", field: "source", about: "deployment (the default), rollout or argocd; a task fact needs --file"},
	{flag: "namespace", field: "namespace"},
	{flag: "name", field: "name"},
	{flag: "uid", field: "uid"},
	{flag: "phase", field: "phase", about: "Progressing, Paused, Healthy, Degraded, SyncFailed or Deleted"},
	{flag: "release-id", field: "release_id"},
	{flag: "pod-hash", field: "pod_hash"},
	{flag: "revision", field: "revision"},
	// The fact holds a list of images; the flag gives one, so its help
	// names the field it fills rather than a field "image" that a --file
	// fact would be refused for.
	{flag: "image", field: "images", about: "the workload's image, sent as a list of this one"},
	{flag: "generation", field: "generation", kind: flagNumber, about: "the workload's metadata.generation"},
	{flag: "observed-generation", field: "observed_generation", kind: flagNumber,
		about: "the workload's status.observedGeneration (default: --generation)"},
	{flag: "step", field: "step", kind: flagNumber, about: "canary step"},
	{flag: "step-count", field: "step_count", kind: flagNumber, about: "canary step count"},
	{flag: "abort", field: "abort", kind: flagBool, about: "the rollout was aborted"},
}

func (ff factFlag) help() string {
	if ff.about == "" {
		return "fact field " + ff.field
	}
	return "fact field " + ff.field + ": " + ff.about
}

// factFlagOf is the flag that fills a fact's field ("images[0]" is
// --image's), or field itself when no flag fills it (observed_at).
func factFlagOf(field string) string {
	name, _, _ := strings.Cut(field, "[")
	for _, ff := range factFlags {
		if ff.field == name {
			return "--" + ff.flag
		}
	}
	return field
}
