// Package testserve runs ripcord's server inside a test's own process, for
// the tests of other packages (the CLI, the GitHub Action, the benchmark
// tool) that need a real `ripcord serve` to talk to over loopback.
// Its files are not _test files so that any package's tests can import it.
package testserve

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/internal/testlog"
)

// CommitTimeout is the commit timeout (app.Options.CommitTimeout) of the
// servers tests start: on a loaded machine under the race detector a group
// commit can outlast production's 8 s, and a 503 there says nothing about
// the test's subject. (app's own tests, which cannot import this package,
// keep a copy: testCommitTimeout.)
const CommitTimeout = 30 * time.Second

// Start runs the server on a free loopback port with config.Defaults and a
// SQLite database of its own in the test's temporary folder, then with
// whatever configure sets; configure is given the server's base URL, for
// the settings that name it (public_url, an OIDC audience), and may be nil.
// The server's log is shown if the test fails (testlog); it stops when the
// test ends, and an error it stops with fails the test. Start returns the
// base URL ("http://127.0.0.1:PORT").
func Start(t testing.TB, configure func(cfg *config.Config, url string)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	cfg := config.Defaults()
	cfg.Database = "sqlite://" + filepath.Join(t.TempDir(), "ripcord.db")
	if configure != nil {
		configure(cfg, url)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := app.New(ctx, cfg, app.Options{Logger: testlog.New(t), CommitTimeout: CommitTimeout})
	if err != nil {
		cancel()
		_ = ln.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server stopped with an error: %v", err)
		}
	})
	return url
}
