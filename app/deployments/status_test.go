package deployments

import (
	"context"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/records"
)

func TestStatusForEveryRecordState(t *testing.T) {
	t.Parallel()
	want := map[records.State]Status{
		records.StateOpened: StatusInProgress, records.StateProgressing: StatusInProgress, records.StatePaused: StatusInProgress,
		records.StateHealthy: StatusSuccess, records.StateDegraded: StatusFailure, records.StateAborted: StatusFailure,
		records.StateFailed: StatusFailure, records.StateSuperseded: StatusInactive, records.StateRolledBack: StatusInactive,
	}
	for _, s := range records.States {
		if got, ok := want[s]; !ok || StatusFor(s) != got {
			t.Errorf("StatusFor(%s) = %s, want %s (a new record state needs a deployment status)", s, StatusFor(s), got)
		}
	}
}

func TestSkipReason(t *testing.T) {
	t.Parallel()
	ok := newRelease("r1")
	for _, c := range []struct {
		name string
		edit func(*records.Record)
		want string
	}{
		{"a release with repository and commit is kept", func(*records.Record) {}, ""},
		{"no repository", func(r *records.Record) { r.Repository = "" }, "the release names no repository"},
		{"repository without owner", func(r *records.Record) { r.Repository = "checkout" }, `repository "checkout" is not owner/name`},
		{"no commit", func(r *records.Record) { r.GitRevision = "" }, "the release has no git_revision to deploy"},
		{"a branch name is not a commit", func(r *records.Record) { r.GitRevision = "main" }, `git_revision "main" is not a commit sha`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := ok
			c.edit(&r)
			if got := SkipReason(r); got != c.want {
				t.Errorf("SkipReason = %q, want %q", got, c.want)
			}
		})
	}
}

func TestEnvironmentFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env                   string
		production, transient bool
	}{
		{"production", true, false}, {"Prod", true, false}, {"prod-eu", true, false},
		{"staging", false, false}, {"product-demo", false, false},
		{"pr-123", false, true}, {"preview-feature", false, true}, {"review/x", false, true},
	} {
		if Production(c.env) != c.production || Transient(c.env) != c.transient {
			t.Errorf("%s: production %v transient %v, want %v %v", c.env, Production(c.env), Transient(c.env), c.production, c.transient)
		}
	}
}

func TestDeploymentOfARollbackSaysSo(t *testing.T) {
	t.Parallel()
	r := newRelease("rb")
	r.Kind, r.RollbackOf, r.RollbackReason = records.KindRollback, "ra", "errors"
	q := DeploymentFor(r)
	if q.Ref != r.GitRevision || q.Payload.ReleaseID != "rb" || q.Payload.Kind != "rollback" || q.Description[:15] != "rollback of ra:" {
		t.Errorf("deployment = %+v", q)
	}
}

// A second job cannot write for a release while the first holds its lease;
// the lease of a job that died runs out.
func TestLeaseKeepsOneWriterPerRelease(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, dbURL string) {
		e := newEnv(t, dbURL)
		r := newRelease("rel-l:prod-eu/production")
		r.Repository = "" // no job of the queue's own takes the lease meanwhile
		e.open(r)
		ctx, now := context.Background(), time.Now()
		if _, ok, err := acquire(ctx, e.db, r.ReleaseID, 9001, now, time.Minute); err != nil || !ok {
			t.Fatalf("first job: ok %v, %v", ok, err)
		}
		if _, ok, _ := acquire(ctx, e.db, r.ReleaseID, 9002, now.Add(30*time.Second), time.Minute); ok {
			t.Error("a second job took a lease that is held")
		}
		if _, ok, _ := acquire(ctx, e.db, r.ReleaseID, 9001, now.Add(30*time.Second), time.Minute); !ok {
			t.Error("the holder's retry could not take its own lease back")
		}
		if err := save(ctx, e.db, row{ReleaseID: r.ReleaseID}, 9002, now); err == nil {
			t.Error("a job without the lease saved")
		}
		if _, ok, _ := acquire(ctx, e.db, r.ReleaseID, 9002, now.Add(2*time.Minute), time.Minute); !ok {
			t.Error("an expired lease was not taken over")
		}
	})
}
