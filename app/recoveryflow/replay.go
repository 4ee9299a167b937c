package recoveryflow

import (
	"time"

	"github.com/ripcord/ripcord/app/pipeline"
)

// A webhook's signature covers its body only: a captured workflow_run
// failure, posted again under any X-GitHub-Delivery id, is accepted as
// GitHub's. While its run's episode is kept, the episode refuses it (the
// attempt was handled); once the retention sweep deleted the episode
// (retention.go), it would be decided as a new failure and could re-run
// the run, or roll back a release that runs now. So a failure of a run
// that no episode follows, nor any rollback dispatch, is ignored when the
// newest time its payload states (the attempt's end, updated_at) is more
// than replayAge before the delivery was received.
//
// GitHub delivers an event when the attempt ends and redelivers it for 3
// days, so no failure GitHub sends is that old; an attempt that ran long
// (a re-run started on day 29 of its run) is judged by its end, not by its
// run's creation. Every failure whose episode the sweep deleted ended
// before the episode's last change, more than rerunHorizon ago, whatever
// retention said when it was swept: replayAge is shorter, so clocks days
// apart still catch such a replay.
//
// Nothing else needs the guard: a success or a cancellation of a run no
// episode follows changes nothing (onSuccess, onStopped), an alert, check
// or rollback outcome job finds no episode and does nothing, and a
// rollback release is ended by its record, not by these tables.
const replayAge = 30 * 24 * time.Hour

// replayed reports whether run's failure, in delivery d, which no episode
// follows, is older than replayAge (see above), and logs it then: the
// delivery ends ignored.
func (f *flow) replayed(d pipeline.Delivery, repo string, run runInfo) bool {
	received := d.ReceivedAt
	if received.IsZero() {
		received = f.deps.Now()
	}
	if run.ChangedAt.IsZero() || received.Sub(run.ChangedAt) <= replayAge {
		return false
	}
	f.deps.Log.Warn("workflow run failure ignored: its payload is older than any failure GitHub delivers and no episode follows the run, so it is a replay",
		"delivery", d.ID, "repository", repo, "run_id", run.ID, "run_attempt", run.Attempt,
		"payload_time", run.ChangedAt.UTC().Format(time.RFC3339), "received_at", received.UTC().Format(time.RFC3339),
		"max_age", replayAge.String())
	return true
}

// newest is the latest of ts; zero when all are.
func newest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}
