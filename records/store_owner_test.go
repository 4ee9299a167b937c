package records

import (
	"context"
	"testing"

	"github.com/ripcord/ripcord/internal/testdb"
)

func TestOwnerIsTheRepositoryOfTheFirstReleaseThatNamesOne(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		s, _ := openStore(t, dbURL)
		in := func(repo string) func(*Record) { return func(r *Record) { r.Repository = repo } }
		openRelease(t, s, record("tooling", "", 0, in(""))) // api_token tooling: claims nothing
		openRelease(t, s, record("first", "", 1, in("acme/checkout")))
		openRelease(t, s, record("later", "", 2, in("acme/payments"), func(r *Record) { r.Cluster = "prod-us" }))
		openRelease(t, s, record("staging", "", 3, in("acme/payments"), func(r *Record) { r.Environment = "staging" }))
		for _, tc := range []struct{ app, env, want string }{
			{"checkout", "prod", "acme/checkout"},
			{"checkout", "staging", "acme/payments"},
			{"payments", "prod", ""},
		} {
			got, err := s.Owner(context.Background(), tc.app, tc.env)
			if err != nil || got != tc.want {
				t.Errorf("owner of %s in %s = %q (%v), want %q", tc.app, tc.env, got, err, tc.want)
			}
		}
	})
}
