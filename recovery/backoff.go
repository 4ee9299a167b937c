package recovery

import (
	"math"
	"time"

	"github.com/ripcord/ripcord/repoconfig"
)

// Policy is the retry part of an app's recovery config.
type Policy struct {
	MaxRetries     int
	InitialBackoff time.Duration
	Multiplier     float64
	MaxBackoff     time.Duration
}

// PolicyFrom takes the retry policy from a loaded config's recovery section
// (repoconfig.Config.RecoveryFor), so the defaults stay in repoconfig.
func PolicyFrom(r repoconfig.Recovery) Policy {
	return Policy{
		MaxRetries:     r.MaxRetries,
		InitialBackoff: r.InitialBackoff,
		Multiplier:     r.Multiplier,
		MaxBackoff:     r.MaxBackoff,
	}
}

// DefaultPolicy is the policy of a config that says nothing about recovery.
func DefaultPolicy() Policy { return PolicyFrom(repoconfig.DefaultRecovery()) }

// Backoff is the wait before retry n (1 for the first retry):
// initial × multiplier^(n-1), capped at MaxBackoff. It is computed in
// floating point and capped before converting back, so a large n or
// multiplier saturates at the cap instead of overflowing into a negative wait.
func (p Policy) Backoff(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	limit := p.MaxBackoff
	if limit < 0 {
		limit = 0
	}
	mult := p.Multiplier
	if mult < 1 || math.IsNaN(mult) {
		mult = 1
	}
	wait := float64(p.InitialBackoff) * math.Pow(mult, float64(n-1))
	if math.IsNaN(wait) || wait < 0 {
		wait = 0
	}
	if wait >= float64(limit) {
		return limit
	}
	return time.Duration(wait)
}
