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
