package app

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestDBHealthLogsAnOutageOnceAndItsEnd(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	h := newDBHealth(slog.New(slog.NewTextHandler(logs, nil)))
	if h.failed(errors.New("duplicate key value violates unique constraint")) || h.Down() {
		t.Fatal("an error of one statement was taken for an outage")
	}
	h.ok()
	down := fmt.Errorf("begin transaction: %w", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"})
	for range 50 {
		if !h.failed(down) {
			t.Fatal("a shutdown of PostgreSQL was not taken for an outage")
		}
	}
	if !h.Down() {
		t.Error("Down is false during an outage")
	}
	h.ok()
	h.ok()
	if h.Down() {
		t.Error("Down is true after a write succeeded")
	}
	out := logs.String()
	if n := strings.Count(out, "the database is unavailable"); n != 1 {
		t.Errorf("the outage was logged %d times, want once:\n%s", n, out)
	}
	if n := strings.Count(out, "the database is back"); n != 1 {
		t.Errorf("its end was logged %d times, want once:\n%s", n, out)
	}
}

func TestJobQueueErrorsAreQuietDuringAnOutage(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	base := slog.New(slog.NewTextHandler(logs, nil))
	h := newDBHealth(base)
	river := slog.New(&outageQuietHandler{Handler: base.Handler(), h: h}).With("component", "jobs")
	river.Error("producer: Error fetching jobs", slog.String("err", "job failed: boom"))
	for range 20 {
		river.Error("producer: Error fetching jobs", slog.String("err", "failed to connect to `user=postgres database=postgres`: dial error: connect: connection refused"))
	}
	out := logs.String()
	if n := strings.Count(out, "Error fetching jobs"); n != 1 {
		t.Errorf("%d of the job queue's errors logged, want only the one that is not an outage:\n%s", n, out)
	}
	if !h.Down() || strings.Count(out, "the database is unavailable") != 1 {
		t.Errorf("the job queue's connection errors did not note one outage:\n%s", out)
	}
}

// The job queue's errors reach dbHealth as text: PostgreSQL's refusal of a
// write for lack of space says "No space left on device", capitalised, and
// a server that speaks another language says only its SQLSTATE.
func TestJobQueueDiskFullErrorsAreAnOutage(t *testing.T) {
	t.Parallel()
	for name, msg := range map[string]string{
		"English": `ERROR: could not extend file "base/16384/16393": No space left on device (SQLSTATE 53100)`,
		"Italian": `ERRORE: estensione del file "base/16384/16393" fallita: Spazio esaurito sul device (SQLSTATE 53100)`,
	} {
		t.Run(name, func(t *testing.T) {
			logs := &syncBuffer{}
			base := slog.New(slog.NewTextHandler(logs, nil))
			h := newDBHealth(base)
			river := slog.New(&outageQuietHandler{Handler: base.Handler(), h: h}).With("component", "jobs")
			for range 5 {
				river.Error("jobcompleter: Error completing jobs", slog.String("err", msg))
			}
			out := logs.String()
			if !h.Down() || strings.Count(out, "the database is unavailable") != 1 || strings.Contains(out, "Error completing jobs") {
				t.Errorf("the job queue's errors on a full disk were not one outage:\n%s", out)
			}
		})
	}
}
