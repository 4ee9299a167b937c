package rolloutflow

import (
	"context"
	"fmt"
	"testing"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb/yearseed"
)

// BenchmarkYearRollouts seeds a year of rollouts (20,000, with their
// batches and audit lines, yearseed.Year) and measures what GET
// /api/v1/rollouts reads for a page, the rollout of one release, and what
// the web UI's releases page asks of the rollouts of its opened releases.
// It only runs when -bench names it (yearseed.SkipUnlessNamed).
//
//	go test -run '^$' -bench YearRollouts -benchtime 20x ./app/rolloutflow
func BenchmarkYearRollouts(b *testing.B) {
	size := yearseed.Year
	size.AuditEvents, size.Deliveries = 0, 0
	yearseed.Each(b, "YearRollouts", size, func(b *testing.B, db *store.DB, h yearseed.History) {
		ctx := context.Background()
		// Every fifth record has a rollout (yearseed), which puts
		// them in half the targets; this one has 100.
		t := h.Targets[len(h.Targets)/2]
		run := yearseed.Measure(b)
		page := func(unfinished bool, limit int) func() (int, error) {
			return func() (int, error) {
				ros, err := listRollouts(ctx, db.Read, t.App, t.Environment, unfinished, limit)
				if err != nil {
					return 0, err
				}
				ids := make([]string, len(ros))
				for i, ro := range ros {
					ids[i] = ro.ID
				}
				if _, err := openUnansweredOf(ctx, db.Read, ids); err != nil {
					return 0, err
				}
				runs, err := dispatchedOf(ctx, db.Read, ids)
				if len(ros) == 0 {
					return 0, fmt.Errorf("no rollouts of %s/%s: the page measures nothing", t.App, t.Environment)
				}
				return len(ros) + len(runs), err
			}
		}
		run("api-rollouts", page(false, 20))
		run("api-rollouts-unfinished", page(true, 20))
		run("api-rollouts-limit-100", page(false, 100))
		release := yearseed.ReleaseID(h.Size.Records / 2)
		run("api-rollouts-release", func() (int, error) {
			ro, err := rolloutOfRelease(ctx, db.Read, release)
			if err != nil {
				return 0, err
			}
			runs, err := listDispatched(ctx, db.Read, ro.ID)
			if err != nil {
				return 0, err
			}
			audit, err := listAudit(ctx, db.Read, ro.ID)
			return 1 + len(runs) + len(audit), err
		})
		ids := make([]string, 0, 100)
		for i := range 100 {
			ids = append(ids, yearseed.ReleaseID(h.Size.Records-1-i))
		}
		run("webui-releases-deployed", func() (int, error) {
			st, err := Deployed(ctx, db.Read, ids)
			return len(st), err
		})
	})
}
