package app

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// /readyz is public: while PostgreSQL is down it says so in two words, and
// the driver's error, which names the database's user, database and host,
// goes to the log, once for the outage.
func TestPostgresReadyzKeepsTheDatabaseErrorToTheLog(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts and stops a PostgreSQL server of its own")
	}
	pg := testdb.StartPostgres(t)
	logs := &syncBuffer{}
	ts := startServer(t, pg.URL(), Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if code, body := outageGet(ts.URL + "/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz before: %d %q", code, body)
	}
	u, err := url.Parse(pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	pg.Stop()
	for range 3 {
		code, body := outageGet(ts.URL + "/readyz")
		if code != http.StatusServiceUnavailable || body != "database unreachable\n" {
			t.Errorf("/readyz while PostgreSQL is down: %d %q, want 503 %q", code, body, "database unreachable\n")
		}
		for _, secret := range []string{u.User.Username(), u.Port(), strings.TrimPrefix(u.Path, "/")} {
			if strings.Contains(body, secret) {
				t.Errorf("/readyz's answer %q names %q of the database URL", body, secret)
			}
		}
	}
	out := logs.String()
	if n := strings.Count(out, "the database is unavailable"); n != 1 || !strings.Contains(out, u.Port()) {
		t.Errorf("the outage was logged %d times, want once with the driver's error (naming port %s):\n%s", n, u.Port(), out)
	}
	pg.Start()
	waitFor(t, "/readyz to answer 200 again", 20*time.Second, func() bool {
		code, _ := outageGet(ts.URL + "/readyz")
		return code == http.StatusOK
	})
}
