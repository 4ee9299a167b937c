package rollout

// CapParallel is p with every batch's parallel capped at max, the server's
// max_parallel: a config is checked against the default cap when it loads,
// but the server running it may allow less. ParallelRequested keeps what
// the config asked for, so the status shows both. p is not changed; a max
// below 1 leaves p as it is.
func (p *Plan) CapParallel(max int) *Plan {
	if p == nil || max < 1 {
		return p
	}
	out := *p
	out.Stages = make([]Stage, len(p.Stages))
	for si, st := range p.Stages {
		st.Passes = make([]Pass, len(p.Stages[si].Passes))
		for pi, pass := range p.Stages[si].Passes {
			pass.Batches = make([]Batch, len(pass.Batches))
			for bi, b := range p.Stages[si].Passes[pi].Batches {
				if b.ParallelRequested == 0 {
					b.ParallelRequested = b.Parallel
				}
				b.Parallel = min(b.Parallel, max)
				pass.Batches[bi] = b
			}
			st.Passes[pi] = pass
		}
		out.Stages[si] = st
	}
	return &out
}
