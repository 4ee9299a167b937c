package recovery

import "testing"

func TestClassifyJobs(t *testing.T) {
	design := map[string][]string{ // the DESIGN.md example
		"build_failure": {"build*", "compile*"},
		"test_failure":  {"test*"},
	}
	tests := []struct {
		name    string
		jobs    []string
		mapping map[string][]string
		want    string
	}{
		{"failed build job", []string{"build"}, design, "build_failure"},
		{"failed compile job matches the second glob", []string{"compile-assets"}, design, "build_failure"},
		{"failed test job", []string{"test-unit"}, design, "test_failure"},
		{"build and tests both failed: a build failure, whatever the job order",
			[]string{"test-unit", "deploy", "build"}, design, "build_failure"},
		{"failed deploy job matches nothing", []string{"deploy"}, design, "unknown"},
		{"no failed jobs", nil, design, "unknown"},
		{"no failure_types configured", []string{"build"}, nil, "unknown"},
		{"job name capitalised", []string{"Build (ubuntu-latest)"}, design, "build_failure"},
		{"reusable-workflow job name with a slash",
			[]string{"deploy / smoke tests"}, map[string][]string{"health_check_failure": {"*smoke*"}}, "health_check_failure"},
		{"health_check_failure beats a repository's own type",
			[]string{"verify"}, map[string][]string{"a_failure": {"verify"}, "health_check_failure": {"verify"}}, "health_check_failure"},
		{"a repository's own types are tried by name",
			[]string{"x"}, map[string][]string{"zeta_failure": {"x"}, "alpha_failure": {"x"}}, "alpha_failure"},
		{"invalid glob in a hand-built mapping is skipped, not fatal",
			[]string{"build["}, map[string][]string{"build_failure": {"build["}, "test_failure": {"*"}}, "test_failure"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Map iteration order changes from run to run; classify several
			// times so an order-dependent answer shows up.
			for range 20 {
				if got := ClassifyJobs(tt.jobs, tt.mapping); got != tt.want {
					t.Fatalf("ClassifyJobs(%q) = %q, want %q", tt.jobs, got, tt.want)
				}
			}
		})
	}
}
