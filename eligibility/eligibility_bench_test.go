package eligibility

import "testing"

// BenchmarkEligibility is the pure check over one target's newest five
// records (loading them from a million-record store is the store's cost).
func BenchmarkEligibility(b *testing.B) {
	rs := six()[:5]
	q := query(repo + "@" + digest("v2"))
	b.ReportAllocs()
	for b.Loop() {
		if !Check(rs, q, 5).Eligible {
			b.Fatal("not eligible")
		}
	}
}

func BenchmarkSelectTarget(b *testing.B) {
	rs := six()[:5]
	b.ReportAllocs()
	for b.Loop() {
		if t, _ := SelectTarget(rs, "R6", 5); t.ReleaseID != "R5" {
			b.Fatal("wrong target")
		}
	}
}
