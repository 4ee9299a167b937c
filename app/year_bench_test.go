package app

import (
	"context"
	"testing"

	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb/yearseed"
)

// BenchmarkYearDeliveries seeds a year of webhook deliveries (200,000,
// yearseed.Year) and measures GET /api/v1/deliveries and
// /api/v1/deliveries/{id}, and the reads of the hourly deliveries sweep.
// It only runs when -bench names it (yearseed.SkipUnlessNamed).
//
//	go test -run '^$' -bench YearDeliveries -benchtime 20x ./app
func BenchmarkYearDeliveries(b *testing.B) {
	size := yearseed.Year
	size.Records, size.AuditEvents, size.Rollouts = 0, 0, 0
	yearseed.Each(b, "YearDeliveries", size, func(b *testing.B, db *store.DB, _ yearseed.History) {
		ctx := context.Background()
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
