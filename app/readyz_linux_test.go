package app

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// On SQLite /readyz must say when the database file cannot be written (a
// full disk, here a file size limit of one byte on this process): reads
// and pings still work then, and a server that acknowledges nothing must
// not be reported ready. Once writes work again it is ready again, without
// a restart.
func TestSQLiteReadyzSaysWhenTheFileCannotBeWritten(t *testing.T) {
	ts := startServer(t, testdb.URL(t, "sqlite"), Options{})
	if code, body := outageGet(ts.URL + "/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz before: %d %q", code, body)
	}
	testdb.SetFileSizeLimit(t, 0, 1)
	lifted := false
	lift := func() {
		if !lifted {
			testdb.SetFileSizeLimit(t, 0, ^uint64(0))
			lifted = true
		}
	}
	defer lift()
	code, body := outageGet(ts.URL + "/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "database") || !strings.Contains(body, "written") {
		t.Errorf("/readyz while the database cannot be written: %d %q, want 503 saying the database cannot be written", code, body)
	}
	lift()
	waitFor(t, "/readyz to answer 200 again", 10*time.Second, func() bool {
		code, _ := outageGet(ts.URL + "/readyz")
		return code == http.StatusOK
	})
}
