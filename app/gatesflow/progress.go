package gatesflow

import (
	"context"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/gates"
)

// evaluateAll evaluates each gate on its own and, for every slow gate still
// evaluating after w.slowAfter, creates its in_progress run right here —
// before any verdict is queued, so the verdict's job finds that run and
// completes it instead of racing it to create a second one. Failing to
// show in_progress is logged, not fatal: the verdict creates the run.
func (w *evaluateWorker) evaluateAll(ctx context.Context, gh *github.Client, gs []gates.Gate, s gates.Subject, started func(gates.Gate) ReportArgs) []gates.Result {
	results := make([]gates.Result, len(gs))
	done := make([]chan struct{}, len(gs))
	all := make(chan struct{})
	for i, g := range gs {
		done[i] = make(chan struct{})
		go func() {
			defer close(done[i])
			results[i] = gates.Evaluate(ctx, []gates.Gate{g}, s)[0]
		}()
	}
	go func() {
		for _, d := range done {
			<-d
		}
		close(all)
	}()
	timer := time.NewTimer(w.slowAfter)
	defer timer.Stop()
	select {
	case <-all:
		return results
	case <-timer.C:
	}
	for i, g := range gs {
		if !gates.IsSlow(g) || closed(done[i]) {
			continue
		}
		if err := showInProgress(ctx, gh, w.deps, started(g), started(g).Seq); err != nil {
			w.deps.Log.Warn("gate not shown in progress", "gate", g.Name(), "error", err)
		}
	}
	<-all
	return results
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
