package recovery

import "github.com/ripcord/ripcord/repoconfig"

// ClassifyJobs names the failure type of a run from the names of its failed
// jobs and the config's failure_types (type → job-name globs). Types are tried
// in repoconfig.FailureTypeOrder — build_failure, test_failure,
// health_check_failure, then the rest by name — so a run whose build and
// deploy both failed is a build failure: nothing was deployed. A type wins
// when any failed job matches any of its globs; repoconfig.FailureUnknown
// ("unknown") when none does.
func ClassifyJobs(failedJobNames []string, mapping map[string][]string) string {
	for _, typ := range repoconfig.FailureTypeOrder(mapping) {
		for _, pattern := range mapping[typ] {
			g, err := repoconfig.CompileGlob(pattern)
			if err != nil {
				continue // Load rejects invalid globs; a hand-built mapping just skips them
			}
			for _, job := range failedJobNames {
				if g.Match(job) {
					return typ
				}
			}
		}
	}
	return repoconfig.FailureUnknown
}
