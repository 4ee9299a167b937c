package recovery

import (
	"testing"
	"time"

	"github.com/ripcord/ripcord/repoconfig"
)

func TestBackoffWithTheDefaults(t *testing.T) {
	// The defaults come from a loaded config, so this also proves that a file
	// without a recovery section gets seed 000's 10s, ×2, 300s.
	cfg, problems := repoconfig.Load([]byte("version: 1\n"))
	if problems != nil {
		t.Fatal(problems)
	}
	p := PolicyFrom(cfg.RecoveryFor("checkout"))
	if p != DefaultPolicy() {
		t.Errorf("policy of an empty config = %+v, want %+v", p, DefaultPolicy())
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 300 * time.Second, 300 * time.Second}
	for i, w := range want {
		if got := p.Backoff(i + 1); got != w {
			t.Errorf("Backoff(%d) = %s, want %s", i+1, got, w)
		}
	}
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		name   string
		policy Policy
		n      int
		want   time.Duration
	}{
		{"huge retry number saturates at the cap instead of overflowing negative",
			Policy{InitialBackoff: 10 * time.Second, Multiplier: 10, MaxBackoff: 5 * time.Minute}, 1000, 5 * time.Minute},
		{"retry number 0 waits like the first retry",
			Policy{InitialBackoff: 10 * time.Second, Multiplier: 2, MaxBackoff: time.Hour}, 0, 10 * time.Second},
		{"multiplier 1 keeps the wait constant",
			Policy{InitialBackoff: 7 * time.Second, Multiplier: 1, MaxBackoff: time.Hour}, 5, 7 * time.Second},
		{"fractional multiplier",
			Policy{InitialBackoff: 10 * time.Second, Multiplier: 1.5, MaxBackoff: time.Hour}, 3, 22500 * time.Millisecond},
		{"max below initial still caps",
			Policy{InitialBackoff: time.Minute, Multiplier: 2, MaxBackoff: 30 * time.Second}, 1, 30 * time.Second},
		{"multiplier below 1 does not shrink the wait",
			Policy{InitialBackoff: 10 * time.Second, Multiplier: 0.5, MaxBackoff: time.Hour}, 3, 10 * time.Second},
		{"zero initial backoff retries at once",
			Policy{InitialBackoff: 0, Multiplier: 2, MaxBackoff: time.Minute}, 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.policy.Backoff(tt.n); got != tt.want {
				t.Errorf("Backoff(%d) = %s, want %s", tt.n, got, tt.want)
			}
		})
	}
}

func BenchmarkBackoff(b *testing.B) {
	p := DefaultPolicy()
	for i := 0; b.Loop(); i++ {
		_ = p.Backoff(i%60 + 1)
	}
}
