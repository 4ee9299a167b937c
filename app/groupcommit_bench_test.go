package app

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testdb"
)

// BenchmarkGroupCommit measures durable delivery writes (a 12 KB body and the
// batch job) from 32 concurrent writers, without HTTP, on each database.
func BenchmarkGroupCommit(b *testing.B) {
	body := []byte(`{"action":"requested","padding":"` + strings.Repeat("x", 12<<10) + `"}`)
	for _, engine := range testdb.Engines {
		b.Run(engine, func(b *testing.B) {
			srv, err := New(context.Background(), testConfig(testdb.MigratedURL(b, engine)), Options{Logger: discardLogger()})
			if err != nil {
				b.Fatal(err)
			}
			defer srv.close()
			defer srv.writer.Close()
			var n atomic.Int64
			b.SetParallelism(16) // 2 cores × 16 = 32 writers
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					id := fmt.Sprintf("bench-%d", n.Add(1))
					if _, _, err := srv.writer.Write(context.Background(), Delivery{ID: id, Event: "check_suite", Body: body, ReceivedAt: time.Now()}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "deliveries/s")
		})
	}
}
