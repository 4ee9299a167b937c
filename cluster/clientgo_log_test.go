package cluster

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A line client-go repeats is logged once per clientGoRepeatWindow, the
// next one saying how many were left out; another line is not held back
// by it.
func TestClientGoRepeatsAreLeftOutForAWhile(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	h := &clientGoHandler{next: slog.NewTextHandler(&out, nil), seen: &repeats{lines: map[string]*repeat{}}}
	logAt := func(at time.Time, msg string) {
		if err := h.Handle(context.Background(), slog.NewRecord(at, slog.LevelError, msg, 0)); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC)
	logAt(t0, "Failed to watch")
	logAt(t0.Add(time.Second), "Failed to watch")
	logAt(t0.Add(time.Minute), "Failed to watch")
	logAt(t0.Add(time.Minute), "Watch closed")
	logAt(t0.Add(clientGoRepeatWindow+time.Second), "Failed to watch")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `msg="Failed to watch"`) || !strings.Contains(lines[1], `msg="Watch closed"`) ||
		!strings.Contains(lines[2], "repeats_left_out=2") {
		t.Errorf("logged:\n%s\nwant Failed to watch, Watch closed, and Failed to watch again after the window with repeats_left_out=2", out.String())
	}
	for _, l := range lines {
		if !strings.Contains(l, "level=WARN") {
			t.Errorf("client-go's error logged as %q; want a warning", l)
		}
	}
}
