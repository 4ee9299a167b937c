package app

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// A failure that is not the database being unavailable (here migrations
// not applied) is logged by /readyz itself, once while it lasts, and its
// end too.
func TestReadyzLogsOncePerFailure(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var l readyzLog
	for range 3 {
		l.failed(log, "migration state unreadable", errSecret)
	}
	l.failed(log, "migrations pending: run ripcord migrate", nil)
	l.ready(log)
	l.ready(log)
	out := logs.String()
	for text, want := range map[string]int{
		"/readyz answers 503: migration state unreadable": 1, "user=ripcord database=ripcord": 1,
		"/readyz answers 503: migrations pending": 1, "/readyz answers ready again": 1,
	} {
		if n := strings.Count(out, text); n != want {
			t.Errorf("%q logged %d times, want %d:\n%s", text, n, want, out)
		}
	}
}

var errSecret = &url.Error{Op: "connect", URL: "user=ripcord database=ripcord host=db.internal", Err: http.ErrHandlerTimeout}
