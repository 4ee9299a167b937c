package main

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
)

type options struct {
	binary, postgres string
	url              string
	duration         time.Duration
	rounds           int
	concurrency      int
	bodyBytes        int
	rssDeliveries    int
}

// scenario is one server and the load it took.
type scenario struct {
	name string
	proc serveProcess
	runs []run
	cpu  time.Duration
}

// loadFor loads the scenario's server for d and keeps the run and the
// server's CPU time it cost.
func (s *scenario) loadFor(o options, d time.Duration, b []byte) run {
	cpu0 := s.proc.cpu()
	r := loadRun(s.proc.hook(), o.concurrency, d, 0, b)
	s.cpu += s.proc.cpu() - cpu0
	s.runs = append(s.runs, r)
	return r
}

func (s *scenario) result() result { return summarize(s.name, s.runs...) }

// cpuPerDelivery is the server's CPU time per acknowledged delivery, in µs.
func (s *scenario) cpuPerDelivery() float64 { return perDelivery(s.cpu, s.result().sent) }

// runIngest starts every server, then loads them in turn, round after
// round: on a shared machine the load others put on it changes from one
// second to the next, and scenarios measured one after the other (as
// this command first did) saw different machines; c/b moved by ±0.1
// between runs. Alternating short stretches gives every scenario the same
// mix, as the fact benchmark's floor and facts do.
func runIngest(o options) error {
	b := body(o.bodyBytes)
	o.rounds = max(o.rounds, 1)
	stretch := o.duration / time.Duration(o.rounds)
	fmt.Printf("ingest: %d connections, %d-byte signed bodies, version-1 GUID delivery ids (as GitHub sends), %s per scenario in %d rounds of (a) (b) (c) (d) in turn, loopback only\n\n",
		o.concurrency, len(b), o.duration, o.rounds)

	var all []*scenario
	defer func() {
		for _, s := range all {
			s.proc.stop()
		}
	}()
	for _, base := range []struct{ name, kind string }{{"(a) bare HMAC handler", "hmac"}, {"(b) go-githubapp dispatcher, no-op", "dispatcher"}} {
		p, err := startBaseline(base.kind)
		if err != nil {
			return err
		}
		all = append(all, &scenario{name: base.name, proc: p})
	}
	dir, err := os.MkdirTemp("", "ripcord-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := startServe(o.binary, "sqlite://"+filepath.Join(dir, "bench.db"))
	if err != nil {
		return err
	}
	sqlite := &scenario{name: "(c) ripcord serve, SQLite", proc: p}
	all = append(all, sqlite)
	idle := p.rss()
	var pg *scenario
	if o.postgres != "" {
		dbURL, drop, err := createDatabase(o.postgres)
		if err != nil {
			return err
		}
		p, err := startServe(o.binary, dbURL)
		if err != nil {
			drop()
			return err
		}
		// The server stops before its database goes: dropped under it, its
		// job queue would log a connection error a second until it stopped.
		defer func() {
			p.stop()
			drop()
		}()
		pg = &scenario{name: "(d) ripcord serve, PostgreSQL", proc: p}
		all = append(all, pg)
	}
	dispatcher := all[1]

	var roundCB, roundDB []float64
	for range o.rounds {
		rates := map[*scenario]float64{}
		for _, s := range all {
			r := s.loadFor(o, stretch, b)
			rates[s] = float64(r.sent) / r.elapsed.Seconds()
		}
		roundCB = append(roundCB, rates[sqlite]/rates[dispatcher])
		if pg != nil {
			roundDB = append(roundDB, rates[pg]/rates[dispatcher])
		}
	}

	for _, s := range all {
		fmt.Println(s.result())
		what := ""
		switch s {
		case sqlite:
			what = " (intake and processing)"
		case pg:
			what = " (ripcord only, not the database server)"
		}
		fmt.Printf("    server CPU per delivery: %.0f µs%s\n", s.cpuPerDelivery(), what)
	}
	if pg == nil {
		fmt.Println("(d) skipped: no --postgres URL (RIPCORD_TEST_POSTGRES)")
	}

	var after int64
	if o.rssDeliveries > 0 {
		sent := sqlite.result().sent
		fill := load("    (filling to RSS target)", sqlite.proc.hook(), o.concurrency, 10*time.Minute, int64(o.rssDeliveries)-sent, b)
		after = sqlite.proc.rss()
		fmt.Printf("    RSS of serve (SQLite): idle %.1f MB; after %d deliveries %.1f MB\n", mb(idle), sent+fill.sent, mb(after))
	}

	rb, rc := dispatcher.result(), sqlite.result()
	fmt.Printf("\nc/b = %.2f (target >= 0.5, p99 <= 50 ms: p99 %.2f ms); per round %s\n", rc.perSecond/rb.perSecond, ms(rc.p99), spread(roundCB))
	if pg != nil {
		fmt.Printf("d/b = %.2f (target >= 0.3); per round %s\n", pg.result().perSecond/rb.perSecond, spread(roundDB))
	}
	fmt.Printf("RSS idle %.1f MB (target <= 60)", mb(idle))
	if after > 0 {
		fmt.Printf(", after %d deliveries %.1f MB (target <= 200)", o.rssDeliveries, mb(after))
	}
	fmt.Println()
	return nil
}

// spread prints the lowest and highest of the per-round ratios.
func spread(xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f-%.2f", slices.Min(xs), slices.Max(xs))
}

type serveProcess struct {
	cmd  *exec.Cmd
	addr string
}

func (p serveProcess) hook() string { return "http://" + p.addr + "/api/github/hook" }

func startServe(bin, dbURL string) (serveProcess, error) {
	addr, err := freeAddr()
	if err != nil {
		return serveProcess{}, err
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "RIPCORD_LISTEN="+addr, "RIPCORD_DATABASE="+dbURL,
		"RIPCORD_GITHUB_WEBHOOK_SECRET="+benchSecret, "RIPCORD_LOG_LEVEL=error")
	cmd.Stderr = os.Stderr
	return startProcess(cmd, addr, "/readyz")
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startProcess starts cmd, serving on addr, and waits until ready answers 200.
func startProcess(cmd *exec.Cmd, addr, ready string) (serveProcess, error) {
	if err := cmd.Start(); err != nil {
		return serveProcess{}, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get("http://" + addr + ready); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				time.Sleep(500 * time.Millisecond) // let start-up garbage settle before reading idle RSS
				return serveProcess{cmd: cmd, addr: addr}, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return serveProcess{}, fmt.Errorf("%s did not become ready in 30 s", cmd.Path)
}

// stop ends the process and waits for it; a stopped one is left alone.
func (p serveProcess) stop() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.cmd.Wait()
}

// rss reads the process's resident set size in bytes from /proc.
func (p serveProcess) rss() int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// cpu is the process's user+system CPU time so far, from /proc.
func (p serveProcess) cpu() time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces) start at ")".
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

func perDelivery(cpu time.Duration, n int64) float64 {
	if n == 0 {
		return 0
	}
	return float64(cpu.Microseconds()) / float64(n)
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

func createDatabase(admin string) (string, func(), error) {
	db, err := sql.Open("pgx", admin)
	if err != nil {
		return "", nil, err
	}
	name := fmt.Sprintf("ripcord_bench_%d", rand.Int64())
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		db.Close()
		return "", nil, fmt.Errorf("create bench database: %w", err)
	}
	u, _ := url.Parse(admin)
	u.Path = "/" + name
	return u.String(), func() {
		_, _ = db.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
		db.Close()
	}, nil
}
