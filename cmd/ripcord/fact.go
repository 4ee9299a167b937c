package main

import (
	"context"
	"encoding/json"
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
	cluster := fs.String("cluster", "", "cluster the fact is from (required)")
	f := map[string]*string{}
	// What the server accepts, so that a fact typed from the flags is not
	// refused for a value the page did not name.
	values := map[string]string{
		"source": ": deployment (the default), rollout or argocd; a task fact needs --file",
		"phase":  ": Progressing, Paused, Healthy, Degraded, SyncFailed or Deleted",
	}
	for _, name := range []string{"source", "namespace", "name", "uid", "phase", "release-id", "pod-hash", "revision"} {
		f[name] = fs.String(name, "", "fact field "+strings.ReplaceAll(name, "-", "_")+values[name])
	}
	// The fact holds a list of images; the flag gives one, so its help
	// names the field it fills rather than a field "image" that a --file
	// fact would be refused for.
	f["image"] = fs.String("image", "", "the workload's image: fact field images, a list of this one")
	generation := fs.Int64("generation", 0, "metadata.generation")
	observed := fs.Int64("observed-generation", 0, "status.observedGeneration (default: --generation)")
	step := fs.Int("step", 0, "canary step")
	steps := fs.Int("step-count", 0, "canary step count")
	abort := fs.Bool("abort", false, "the rollout was aborted")
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
	if *file == "" && *f["source"] == "task" {
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
		if *observed == 0 {
			*observed = *generation
		}
		fact := map[string]any{"source": firstOf(*f["source"], "deployment"), "cluster": *cluster,
			"namespace": *f["namespace"], "name": *f["name"], "uid": *f["uid"], "generation": *generation,
			"observed_generation": *observed, "phase": *f["phase"], "step": *step, "step_count": *steps,
			"pod_hash": *f["pod-hash"], "abort": *abort, "release_id": *f["release-id"],
			"revision": *f["revision"], "observed_at": time.Now().UTC().Format(time.RFC3339Nano)}
		if *f["image"] != "" {
			fact["images"] = []string{*f["image"]}
		}
		body, err = json.Marshal(fact)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ripcord fact:", err)
		return 2
	}
	var out json.RawMessage
	if err := c.do(context.Background(), "POST", "/api/v1/facts/"+url.PathEscape(*cluster), body, &out); err != nil {
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
