package app

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

// The sweep deletes an old creation claim whose job River is done with or
// no longer has; it keeps a claim of a job that will still run, however
// old, and a recent claim.
func TestSweepDeletesOldClaimsOfJobsGone(t *testing.T) {
	t.Parallel()
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		t.Parallel()
		db := testdb.OpenMigrated(t, dbURL)
		ctx := context.Background()
		rc := testdb.InsertOnlyRiver(t, db)
		live, err := rc.Insert(ctx, DeliverySweepArgs{}, &river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		done, err := rc.Insert(ctx, SweepArgs{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Write.ExecContext(ctx, `UPDATE river_job SET state = 'completed', finalized_at = created_at WHERE id = $1`, done.Job.ID); err != nil {
			t.Fatal(err)
		}
		old, recent := store.Micros(time.Now().Add(-2*claimSweepAge)), store.Micros(time.Now())
		for _, c := range []struct {
			key string
			job int64
			at  int64
		}{
			{"old, job live", live.Job.ID, old},
			{"old, job completed", done.Job.ID, old},
			{"old, job no longer in River", 987654321, old},
			{"recent, job no longer in River", 987654322, recent},
		} {
			if _, err := db.Write.ExecContext(ctx, `INSERT INTO creation_claims (claim_key, claim, claimed_at) VALUES ($1, $2, $3)`, c.key, c.job, c.at); err != nil {
				t.Fatal(err)
			}
		}
		n, err := sweepClaims(ctx, db, time.Now().Add(-claimSweepAge))
		if err != nil {
			t.Fatal(err)
		}
		if n != 2 {
			t.Errorf("swept %d claims, want 2", n)
		}
		var left []string
		rows, err := db.Read.QueryContext(ctx, `SELECT claim_key FROM creation_claims ORDER BY claim_key`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				t.Fatal(err)
			}
			left = append(left, k)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if want := []string{"old, job live", "recent, job no longer in River"}; len(left) != 2 || left[0] != want[0] || left[1] != want[1] {
			t.Errorf("claims left %q, want %q", left, want)
		}
	})
}
