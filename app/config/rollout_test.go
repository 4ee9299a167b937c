package config

import (
	"strings"
	"testing"
)

func TestRolloutSettings(t *testing.T) {
	c, err := load(t, nil, map[string]string{"RIPCORD_CONFIG": writeFile(t, "ripcord.yml",
		"rollout:\n  max_parallel: 4\n  prometheus_url: http://prom.internal:9090/\n")})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Rollout{MaxParallel: 4, PrometheusURL: "http://prom.internal:9090"}); c.Rollout != want {
		t.Errorf("rollout %+v, want %+v", c.Rollout, want)
	}
	if c, _ := load(t, nil, nil); c.Rollout.MaxParallel != 16 {
		t.Errorf("default max_parallel %d, want 16", c.Rollout.MaxParallel)
	}
	for _, tc := range []struct{ name, env, value, want string }{
		{"a max_parallel of zero would stop every batch", "RIPCORD_ROLLOUT_MAX_PARALLEL", "0", "rollout.max_parallel"},
		{"an alertmanager without scheme", "RIPCORD_ROLLOUT_ALERTMANAGER_URL", "am:9093", "rollout.alertmanager_url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, nil, map[string]string{tc.env: tc.value})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %s", err, tc.want)
			}
		})
	}
}
