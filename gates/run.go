package gates

import (
	"context"
	"fmt"
	"sync"
)

// Result is one gate's evaluation, rendered.
type Result struct {
	Gate    string
	Class   Class
	Verdict Verdict
	Output  Output
}

// Evaluate runs every gate on s in parallel and renders each verdict, in
// the order of gs. A gate that panics becomes an Error verdict: a bug in
// one gate must not pass it, nor stop the others from reporting.
func Evaluate(ctx context.Context, gs []Gate, s Subject) []Result {
	out := make([]Result, len(gs))
	var wg sync.WaitGroup
	for i, g := range gs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := safeEvaluate(ctx, g, s)
			out[i] = Result{Gate: g.Name(), Class: g.Class(), Verdict: v, Output: Render(g.Name(), g.Class(), v, s)}
		}()
	}
	wg.Wait()
	return out
}

func safeEvaluate(ctx context.Context, g Gate, s Subject) (v Verdict) {
	defer func() {
		if r := recover(); r != nil {
			v = Errored(fmt.Sprintf("gate %s crashed: %v", g.Name(), r))
		}
	}()
	if err := ctx.Err(); err != nil {
		return Errored(fmt.Sprintf("not evaluated: %v", err))
	}
	return g.Evaluate(ctx, s)
}
