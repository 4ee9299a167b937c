package app

import (
	"context"
	"fmt"
	"time"

	"github.com/ripcord/ripcord/app/pipeline"
)

// stallAfterFor is the stall_after that governs the releases of repository:
// the one its .github/ripcord.yml (or its organisation's) sets, read as
// every capability reads the file (revalidated by ETag, parsed once per
// blob), else the server's. A release with no repository, a repository the
// App is not installed on, with no file or with one that does not load
// takes the server's value. So does one whose file cannot be read right now:
// the stall alert is the only sign of a lost fact (seed 003, decision 6),
// so a GitHub outage must not silence it; the failure is logged.
func (s *Server) stallAfterFor(ctx context.Context, repository string) time.Duration {
	if repository == "" {
		return s.cfg.StallAfter
	}
	d, err := s.repoStallAfter(ctx, repository)
	if err != nil {
		s.log.Warn("stall check: the repository's stall_after cannot be read; using the server's",
			"repository", repository, "stall_after", s.cfg.StallAfter, "err", err)
		return s.cfg.StallAfter
	}
	if d <= 0 {
		return s.cfg.StallAfter
	}
	return d
}

// repoStallAfter is the stall_after repository's config sets; 0 when
// there is no config, it does not load, or it leaves stall_after out.
func (s *Server) repoStallAfter(ctx context.Context, repository string) (time.Duration, error) {
	inst, err := pipeline.InstallationOf(ctx, s.db.Read, repository)
	if err != nil || inst == 0 {
		return 0, err
	}
	gh, err := s.github.NewInstallationClient(inst)
	if err != nil {
		return 0, fmt.Errorf("client for installation %d: %w", inst, err)
	}
	res, err := s.configs.Load(ctx, gh.Repositories, repository, "")
	if err != nil || !res.Valid() {
		return 0, err
	}
	return res.Config.StallAfter, nil
}
