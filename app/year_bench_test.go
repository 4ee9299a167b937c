package app

import (
	"context"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
	"github.com/ripcord/ripcord/internal/testdb/yearseed"
)

// BenchmarkYearDeliveries seeds a year of webhook deliveries (200,000,
// yearseed.Year) and measures GET /api/v1/deliveries and
// /api/v1/deliveries/{id}, and the reads of the hourly deliveries sweep.
// It only runs when -bench names it (yearseed.SkipUnlessNamed).
//
//	go test -run '^$' -bench YearDeliveries -benchtime 20x ./app
func BenchmarkYearDeliveries(b *testing.B) {
	yearseed.SkipUnlessNamed(b, "YearDeliveries")
	for _, engine := range testdb.Engines {
		b.Run(engine, func(b *testing.B) {
			ctx := context.Background()
			db := testdb.OpenMigrated(b, testdb.URL(b, engine))
			start := time.Now()
			size := yearseed.Year
			size.Records, size.AuditEvents, size.Rollouts = 0, 0, 0
			yearseed.Seed(b, db, size)
			b.Logf("%s: seeded a year of deliveries in %s", engine, time.Since(start).Round(time.Millisecond))
			run := yearseed.Measure(b)
			run("api-deliveries", func() (int, error) {
				ds, err := listDeliveries(ctx, db.Read, defaultListLimit)
				return len(ds), err
			})
			run("api-deliveries-limit-1000", func() (int, error) {
				ds, err := listDeliveries(ctx, db.Read, maxListLimit)
				return len(ds), err
			})
			run("api-delivery", func() (int, error) {
				_, err := getDelivery(ctx, db.Dialect, db.Read, "dlv-0100000", false)
				return 1, err
			})
			// The first round fails the deliveries the seed left stranded
			// (queued after an attempt, with no retry job); every round
			// after looks for more.
			run("sweep-stranded", func() (int, error) {
				ds, err := failStrandedDeliveries(ctx, db)
				return len(ds), err
			})
			run("sweep-nothing-past-retention", func() (int, error) {
				return sweepDeliveries(ctx, db, yearseed.Start)
			})
		})
	}
}
