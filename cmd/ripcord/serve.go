package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/ripcord/ripcord/app"
	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/internal/memtrim"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/version"
)

// configPages are what serve's and migrate's -h pages say besides their
// flags, which are the settings.
var configPages = map[string]struct {
	about    string
	examples []string
}{
	"serve": {"Runs the GitHub App server: it receives GitHub's webhooks at /api/github/hook, " +
		"runs the job queue, and serves /api/v1, the set-up page and the releases page. " +
		"Every setting is a flag, a RIPCORD_* environment variable or a key of the --config file " +
		"(flag, then environment, then file, then default; the README's configuration reference lists them). " +
		"It listens first, so that an address it cannot listen on stops it before the database is touched, " +
		"then applies the database migrations; requests wait, unanswered, until they are done. " +
		"It stops on SIGTERM or SIGINT after finishing the requests and jobs in flight.", []string{
		"ripcord serve",
		"ripcord serve --listen 0.0.0.0:8080 --public-url https://ripcord.example.com --database postgres://ripcord:secret@db:5432/ripcord",
		"ripcord serve --config /etc/ripcord/ripcord.yml",
	}},
	"migrate": {"Applies the database migrations (ripcord's and its job queue's) to the database of " +
		"--database and exits; serve applies them too at every start. Several may run at once " +
		"(they take a lock). It takes the same settings as serve and uses only the database, " +
		"but a bad setting stops it as it would stop serve.", []string{
		"ripcord migrate",
		"ripcord migrate --database postgres://ripcord:secret@db:5432/ripcord",
	}},
}

// loadConfig parses a command's flags and loads the server configuration,
// printing one line per bad setting. code is the exit code when ok is false.
// unknown are the RIPCORD_* variables of the environment that ripcord does
// not read, for the command to warn about: an old variable left in a unit
// file must not stop a start, but a typo must not pass unnoticed either.
func loadConfig(name string, args []string) (cfg *config.Config, unknown []config.UnknownEnv, code int, ok bool) {
	page := configPages[name]
	fs := newFlags("ripcord "+name, "[flags]", page.about, page.examples...)
	config.Register(fs)
	if code, stop := parse(fs, args); stop {
		return nil, nil, code, false
	}
	if code, stop := noArgs(fs); stop {
		return nil, nil, code, false
	}
	unknown = config.CheckEnv(os.Environ())
	cfg, err := config.Load(fs, os.Getenv)
	if err != nil {
		// The typo may be why a setting is missing or wrong.
		warnUnknownEnv(name, unknown)
		fmt.Fprintln(os.Stderr, err)
		return nil, nil, 2, false
	}
	return cfg, unknown, 0, true
}

// warnUnknownEnv prints one warning line per unknown variable.
func warnUnknownEnv(command string, unknown []config.UnknownEnv) {
	for _, u := range unknown {
		fmt.Fprintf(os.Stderr, "ripcord %s: warning: %s\n", command, u)
	}
}

func newLogger(level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}

func runServe(args []string) int {
	cfg, unknown, code, ok := loadConfig("serve", args)
	if !ok {
		return code
	}
	log := newLogger(cfg.LogLevel)
	log.Info("starting ripcord", "version", version.String())
	for _, u := range unknown {
		log.Warn(u.String(), "variable", u.Name)
	}
	if half := cfg.HalfConfiguredApp(); half != "" {
		log.Warn(half)
	}
	if memtrim.TuneServerGC(os.Getenv) {
		log.Debug("GC tuned for a server", "gc_percent", memtrim.ServerGCPercent, "memory_limit_bytes", memtrim.ServerMemoryLimit)
	}
	if n := memtrim.TuneServerProcs(os.Getenv); n > 0 {
		log.Debug("one processor more than cores for the intake's blocking writes", "gomaxprocs", n)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Listen before the database is opened: a taken port is then reported
	// before migrations touch anything (they created ./ripcord.db in a
	// fresh folder first). Until Run serves, the kernel queues connections
	// and nothing answers them, so /healthz and /readyz answer only once
	// the server is ready to serve them.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		if msg, ok := listenProblem(cfg, err); ok {
			log.Error(msg)
		} else {
			log.Error("cannot listen", "listen", cfg.Listen, "err", err)
		}
		return 1
	}
	cfg.ListeningOn(ln.Addr().String()) // the port the kernel chose for listen's :0
	srv, err := app.New(ctx, cfg, app.Options{Logger: log})
	if err != nil {
		ln.Close()
		log.Error("cannot start", "err", err)
		return 1
	}
	if err := srv.Run(ctx, ln); err != nil {
		log.Error("server stopped with an error", "err", err)
		return 1
	}
	log.Info("stopped")
	return 0
}

func runMigrate(args []string) int {
	cfg, unknown, code, ok := loadConfig("migrate", args)
	if !ok {
		return code
	}
	warnUnknownEnv("migrate", unknown)
	ctx := context.Background()
	db, err := store.Open(ctx, cfg.Database)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ripcord migrate:", err)
		return 1
	}
	defer db.Close()
	res, err := db.Migrate(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ripcord migrate:", err)
		return 1
	}
	for _, a := range res.Applied {
		fmt.Println("applied", a)
	}
	fmt.Printf("%s: schema version %d; %d job-queue migrations applied\n", db.Source, res.Version, res.River)
	return 0
}

// runVersion prints the version. It takes no arguments, so that -h shows
// its page like every other command's and a mistyped command line is an
// error rather than a version printed as if it had worked.
func runVersion(args []string) int {
	fs := newFlags("ripcord version", "", "")
	fs.Usage = func() {
		writePage(fs.Output(), "ripcord version", "Prints the version; it takes no flags or arguments.", []string{"ripcord version"})
	}
	if code, stop := parse(fs, args); stop {
		return code
	}
	if code, stop := noArgs(fs); stop {
		return code
	}
	fmt.Println("ripcord", version.String())
	return 0
}

// listenProblem words a failure to listen as the bad setting it is, naming
// the listen key, where its value came from and what to do: "bind: address
// already in use" alone left a newcomer, whose listen is the default
// 127.0.0.1:8080, to find out which setting moves it.
func listenProblem(cfg *config.Config, err error) (string, bool) {
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "listen" {
		return "", false
	}
	const how = "set another host:port with --listen, RIPCORD_LISTEN or listen in the --config file"
	what := "listen on an address of this machine, with a port it may use: " + how
	if errors.Is(err, syscall.EADDRINUSE) {
		what = "another process listens there (another ripcord serve?): stop it, or " + how
	}
	return fmt.Sprintf("config: listen (from %s): cannot listen on %s: %v; %s",
		cfg.SourceOf("listen"), cfg.Listen, op.Err, what), true
}
