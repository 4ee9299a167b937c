package app

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

// A server on SQLite is its database's only one: at start it hands every
// job marked running back to the queue, which would have a second server
// run again the jobs the first is running (a re-run, a pull request, a
// rollback carried out twice). A second `ripcord serve` on the same file is
// refused, naming PostgreSQL for several replicas; once the first stops,
// a server starts on the file again.
func TestASecondServerOnOneSQLiteFileIsRefused(t *testing.T) {
	t.Parallel()
	dbURL := testdb.MigratedURL(t, "sqlite")
	ctx, stop := context.WithCancel(context.Background())
	first, err := New(ctx, testConfig(dbURL), Options{Logger: discardLogger()})
	if err != nil {
		stop()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		stop()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- first.Run(ctx, ln) }()
	stopped := false
	stopFirst := func() {
		if !stopped {
			stopped = true
			stop()
			if err := <-done; err != nil {
				t.Errorf("first server stopped with an error: %v", err)
			}
		}
	}
	t.Cleanup(stopFirst)
	// A job the first server is running, as its River client marks it.
	if _, err := first.db.Write.Exec(`INSERT INTO river_job (kind, args, state, attempt, max_attempts, queue, priority, attempted_at)
		VALUES ('test_running', '{}', 'running', 1, 1, 'test_idle', 1, CURRENT_TIMESTAMP)`); err != nil {
		t.Fatal(err)
	}

	second, err := New(context.Background(), testConfig(dbURL), Options{Logger: discardLogger()})
	if err == nil {
		second.close()
		t.Fatal("a second server started on the SQLite file the first one serves")
	}
	if msg := err.Error(); !strings.Contains(msg, "another ripcord serve") || !strings.Contains(msg, "postgres://") {
		t.Errorf("second server's error = %v; want it to say another ripcord serve has the file, naming postgres:// for several replicas", err)
	}
	var state string
	if err := first.db.Read.QueryRow(`SELECT state FROM river_job WHERE kind = 'test_running'`).Scan(&state); err != nil {
		t.Fatal(err)
	}
	if state != "running" {
		t.Errorf("the first server's running job is %s after the second start, want still running", state)
	}

	stopFirst()
	again, err := New(context.Background(), testConfig(dbURL), Options{Logger: discardLogger()})
	if err != nil {
		t.Fatalf("a server on the file after the first stopped: %v", err)
	}
	again.writer.Close()
	again.close()
}
