package testdb

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testnet"
)

// PGServer is a throwaway PostgreSQL server of the test's own, on a
// loopback port, that the test may stop and start again (an outage): the
// shared server of RIPCORD_TEST_POSTGRES must stay up for the other tests.
// It uses the binaries scripts/with-postgres.sh uses (and .ci/run
// installs): the newest /usr/lib/postgresql/*/bin.
type PGServer struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	run  []string // runs a command as the data directory's owner
}

// PostgresBin is the newest /usr/lib/postgresql/*/bin, as
// scripts/with-postgres.sh finds it, or "" when none is installed.
func PostgresBin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) < pgVersion(dirs[j]) })
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "pg_ctl")); err == nil {
			return dirs[i]
		}
	}
	return ""
}

func pgVersion(bin string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
	return n
}

// StartPostgres initialises and starts a server of the test's own, which
// is stopped and removed when the test ends. The test is skipped, saying
// why, when PostgreSQL is not installed.
func StartPostgres(t testing.TB) *PGServer {
	t.Helper()
	bin := PostgresBin()
	if bin == "" {
		t.Skip("needs PostgreSQL's binaries in /usr/lib/postgresql/*/bin (apt-get install postgresql; .ci/run and scripts/with-postgres.sh install them)")
	}
	dir, err := os.MkdirTemp("", "ripcord-pg-outage")
	if err != nil {
		t.Fatal(err)
	}
	s := &PGServer{t: t, bin: bin, dir: dir}
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root: run it as postgres, as
		// scripts/with-postgres.sh does.
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			t.Skipf("running as root and there is no postgres user to run PostgreSQL as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			t.Fatal(err)
		}
		s.run = []string{"runuser", "-u", "postgres", "--"}
	}
	t.Cleanup(func() {
		_ = s.ctl("stop", "-m", "immediate")
		os.RemoveAll(dir)
	})
	if out, err := s.cmd(filepath.Join(bin, "initdb"), "--auth=trust", "--no-sync", "-U", "postgres", "-D", s.data()).CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	s.port = testnet.FreePort(t)
	s.Start()
	return s
}

// URL is the server's postgres database, as the postgres user.
func (s *PGServer) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// Stop stops the server the way an operator's restart does (pg_ctl's
// fast mode): clients are disconnected and new connections refused.
func (s *PGServer) Stop() {
	s.t.Helper()
	if err := s.ctl("stop", "-m", "fast"); err != nil {
		s.t.Fatalf("stop PostgreSQL: %v", err)
	}
}

// Start starts the server (again), on the same port and data.
func (s *PGServer) Start() {
	s.t.Helper()
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c synchronous_commit=off -c full_page_writes=off", s.port, s.dir)
	if err := s.ctl("start", "-l", filepath.Join(s.dir, "log"), "-o", opts); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		s.t.Fatalf("start PostgreSQL: %v\n%s", err, log)
	}
}

func (s *PGServer) data() string { return filepath.Join(s.dir, "data") }

func (s *PGServer) ctl(args ...string) error {
	args = append([]string{"-D", s.data(), "-w", "-t", "20"}, args...)
	out, err := s.cmd(filepath.Join(s.bin, "pg_ctl"), args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

func (s *PGServer) cmd(name string, args ...string) *exec.Cmd {
	argv := append(append(append([]string{}, s.run...), name), args...)
	c := exec.Command(argv[0], argv[1:]...)
	c.WaitDelay = 30 * time.Second
	return c
}
