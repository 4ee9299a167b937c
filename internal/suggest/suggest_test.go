package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"retry", "retry", 0}, {"retyr", "retry", 2}, {"max_retry", "max_retries", 3},
		{"", "abc", 3}, {"rollbakc", "rollback", 2}, {"café", "cafe", 1},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestClosestAndNear(t *testing.T) {
	known := []string{"rollback", "rollout", "releases"}
	if best, d := Closest("rollbak", known); best != "rollback" || d != 1 || !Near(d, len("rollbak")) {
		t.Errorf(`Closest("rollbak") = %q, %d; want "rollback", 1, near`, best, d)
	}
	if best, d := Closest("xyz", known); Near(d, len("xyz")) {
		t.Errorf(`Closest("xyz") = %q, %d: want it not near`, best, d)
	}
	if best, d := Closest("x", nil); best != "" || d != -1 || Near(d, 1) {
		t.Errorf("Closest over nothing = %q, %d; want \"\", -1, not near", best, d)
	}
}
