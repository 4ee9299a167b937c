package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testbin"
	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/internal/testnet"
)

// migrationLock is internal/store's migrationLockKey, the advisory lock
// that migrations take on PostgreSQL.
const migrationLock = 0x72697063

// serve listens before it migrates, so that a taken port is reported
// before the database is touched. While migrations run (here: wait for
// another replica's lock) the port takes connections but nothing answers
// them: /healthz must not say the process is up before it can serve, and
// once it serves, a request sent meanwhile is answered.
func TestServeAnswersNothingUntilItHasMigrated(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the server as a child process")
	}
	bin, err := testbin.Ripcord()
	if err != nil {
		t.Fatal(err)
	}
	dbURL := testdb.URL(t, "postgres")
	ctx := context.Background()
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	holder, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, migrationLock); err != nil {
		t.Fatal(err)
	}

	addr := testnet.FreeAddr(t)
	c := &child{addr: addr, logs: &lockedBuffer{}}
	c.cmd = exec.Command(bin, "serve")
	c.cmd.Env = append(os.Environ(), "RIPCORD_LISTEN="+addr, "RIPCORD_DATABASE="+dbURL, "RIPCORD_API_TOKEN=t",
		"RIPCORD_GITHUB_WEBHOOK_SECRET=s", "RIPCORD_LOG_LEVEL=warn", "RIPCORD_CONFIG=")
	c.cmd.Stdout, c.cmd.Stderr = c.logs, c.logs
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		c.cmd.Process.Signal(syscall.SIGTERM)
		c.cmd.Wait()
	}()

	// The port takes connections while the migrations wait for the lock.
	var conn net.Conn
	deadline := time.Now().Add(30 * time.Second)
	for {
		if conn, err = net.DialTimeout("tcp", addr, time.Second); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not listen while its migrations waited: %v\n%s", err, c.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: ripcord\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	answers := bufio.NewReader(conn)
	conn.SetReadDeadline(time.Now().Add(time.Second))
	if line, err := answers.ReadString('\n'); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("GET /healthz while the migrations wait: %q, %v; want no answer", line, err)
	}

	if _, err := holder.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, migrationLock); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if line, err := answers.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("GET /healthz sent while the migrations waited, once they are done: %q, %v\n%s", line, err, c.logs.String())
	}
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz once serving: %d, want 200", resp.StatusCode)
	}
}
