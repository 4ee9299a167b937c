package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"

	"github.com/palantir/go-githubapp/githubapp"
)

// The baselines (a) and (b) run as processes of their own, as `ripcord
// serve` does for (c) and (d): all four servers then meet the loader in
// the same way, and the CPU each spends per delivery is read the same way
// (from /proc), which says more than a rate on a shared machine.

// baselineHandler is the handler of baseline kind "hmac" (a) or
// "dispatcher" (b).
func baselineHandler(kind string) (http.Handler, error) {
	switch kind {
	case "hmac":
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, err := readAll(r)
			if err != nil || !validHMAC(r.Header.Get("X-Hub-Signature-256"), body) {
				http.Error(w, "bad signature", http.StatusUnauthorized)
				return
			}
			w.WriteHeader(http.StatusAccepted)
		}), nil
	case "dispatcher":
		return githubapp.NewEventDispatcher([]githubapp.EventHandler{noop{}}, benchSecret), nil
	}
	return nil, fmt.Errorf("unknown baseline %q: want hmac or dispatcher", kind)
}

type noop struct{}

func (noop) Handles() []string { return []string{"check_suite"} }
func (noop) Handle(context.Context, string, string, []byte) error {
	return nil
}

// runBaseline is `ripcord-bench baseline --kind K --listen ADDR`: it serves
// the baseline's hook and /healthz until it is killed.
func runBaseline(args []string) error {
	fs := flag.NewFlagSet("baseline", flag.ExitOnError)
	kind := fs.String("kind", "dispatcher", "hmac (a) or dispatcher (b)")
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	_ = fs.Parse(args)
	h, err := baselineHandler(*kind)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("POST /api/github/hook", h)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	return http.ListenAndServe(*listen, mux)
}

// startBaseline runs this program's baseline subcommand as a child process.
func startBaseline(kind string) (serveProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return serveProcess{}, err
	}
	addr, err := freeAddr()
	if err != nil {
		return serveProcess{}, err
	}
	cmd := exec.Command(self, "baseline", "--kind", kind, "--listen", addr)
	cmd.Stderr = os.Stderr
	return startProcess(cmd, addr, "/healthz")
}
