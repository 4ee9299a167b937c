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
	concurrency      int
	bodyBytes        int
	rssDeliveries    int
}

func runIngest(o options) error {
	b := body(o.bodyBytes)
	fmt.Printf("ingest: %d connections, %d-byte signed bodies, %s per scenario, loopback only\n\n", o.concurrency, len(b), o.duration)

	ra, _, err := loadBaseline("(a) bare HMAC handler", "hmac", o, b)
	if err != nil {
		return err
	}
	fmt.Println(ra)
	rb, cpuB, err := loadBaseline("(b) go-githubapp dispatcher, no-op", "dispatcher", o, b)
	if err != nil {
		return err
	}
	fmt.Println(rb)
	fmt.Printf("    server CPU per delivery (b): %.0f µs\n", cpuB)

	dir, err := os.MkdirTemp("", "ripcord-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sqlite, err := startServe(o.binary, "sqlite://"+filepath.Join(dir, "bench.db"))
	if err != nil {
		return err
	}
	idle := sqlite.rss()
	cpu0 := sqlite.cpu()
	rc := load("(c) ripcord serve, SQLite", sqlite.hook(), o.concurrency, o.duration, 0, b)
	fmt.Println(rc)
	fmt.Printf("    server CPU per delivery (SQLite): %.0f µs (intake and processing)\n", perDelivery(sqlite.cpu()-cpu0, rc.sent))
	var after int64
	if o.rssDeliveries > 0 {
		sent := rc.sent
		fill := load("    (filling to RSS target)", sqlite.hook(), o.concurrency, 10*time.Minute, int64(o.rssDeliveries)-sent, b)
		after = sqlite.rss()
		fmt.Printf("    RSS of serve (SQLite): idle %.1f MB; after %d deliveries %.1f MB\n", mb(idle), sent+fill.sent, mb(after))
	} else {
		fmt.Printf("    RSS of serve (SQLite): idle %.1f MB\n", mb(idle))
	}
	sqlite.stop()

	var rd result
	if o.postgres != "" {
		dbURL, drop, err := createDatabase(o.postgres)
		if err != nil {
			return err
		}
		defer drop()
		pg, err := startServe(o.binary, dbURL)
		if err != nil {
			return err
		}
		cpu0 := pg.cpu()
		rd = load("(d) ripcord serve, PostgreSQL", pg.hook(), o.concurrency, o.duration, 0, b)
		cpu := pg.cpu() - cpu0
		pg.stop()
		fmt.Println(rd)
		fmt.Printf("    server CPU per delivery (PostgreSQL): %.0f µs (ripcord only, not the database server)\n", perDelivery(cpu, rd.sent))
	} else {
		fmt.Println("(d) skipped: no --postgres URL (RIPCORD_TEST_POSTGRES)")
	}

	fmt.Printf("\nc/b = %.2f (target >= 0.5, p99 <= 50 ms: p99 %.2f ms)\n", rc.perSecond/rb.perSecond, ms(rc.p99))
	if rd.sent > 0 {
		fmt.Printf("d/b = %.2f (target >= 0.3)\n", rd.perSecond/rb.perSecond)
	}
	if idle > 0 {
		fmt.Printf("RSS idle %.1f MB (target <= 60)", mb(idle))
		if after > 0 {
			fmt.Printf(", after %d deliveries %.1f MB (target <= 200)", o.rssDeliveries, mb(after))
		}
		fmt.Println()
	}
	return nil
}

// loadBaseline loads a baseline server in its own process and returns its
// figures and its CPU per delivery in µs.
func loadBaseline(name, kind string, o options, b []byte) (result, float64, error) {
	p, err := startBaseline(kind)
	if err != nil {
		return result{}, 0, err
	}
	defer p.stop()
	cpu0 := p.cpu()
	r := load(name, p.hook(), o.concurrency, o.duration, 0, b)
	return r, perDelivery(p.cpu()-cpu0, r.sent), nil
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

func (p serveProcess) stop() {
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
