package config

import (
	"flag"
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

// LoadSetting finds one setting as Load does for serve, and only that
// setting's problem stops it: `ripcord validate` reads the server's
// rollout.max_parallel where another setting may be left for serve.
func TestLoadSettingFindsOneSettingAsServeDoes(t *testing.T) {
	file := writeFile(t, "ripcord.yml", "listen: nowhere\nrollout:\n  max_parallel: 4\n")
	cases := []struct {
		name   string
		args   []string
		env    map[string]string
		want   int
		source string
	}{
		{"the default", nil, nil, 16, "default"},
		{"the file, beside another setting's bad value", nil, map[string]string{"RIPCORD_CONFIG": file}, 4, file + ":3:17"},
		{"the environment over the file", nil, map[string]string{"RIPCORD_CONFIG": file, "RIPCORD_ROLLOUT_MAX_PARALLEL": "6"}, 6, "environment variable RIPCORD_ROLLOUT_MAX_PARALLEL"},
		{"the command's flag over the environment", []string{"--max-parallel", "7"}, map[string]string{"RIPCORD_ROLLOUT_MAX_PARALLEL": "6"}, 7, "flag --max-parallel"},
		{"--config over RIPCORD_CONFIG", []string{"--config", file}, map[string]string{"RIPCORD_CONFIG": "/nonexistent.yml"}, 4, file + ":3:17"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := flag.NewFlagSet("validate", flag.ContinueOnError)
			fs.String("config", "", "")
			fs.String("max-parallel", "", "")
			if err := fs.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			cfg, source, err := LoadSetting(fs, func(k string) string { return c.env[k] }, "rollout.max_parallel", "max-parallel")
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Rollout.MaxParallel != c.want || source != c.source {
				t.Errorf("max_parallel %d from %q, want %d from %q", cfg.Rollout.MaxParallel, source, c.want, c.source)
			}
		})
	}
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	if _, _, err := LoadSetting(fs, func(k string) string {
		return map[string]string{"RIPCORD_ROLLOUT_MAX_PARALLEL": "none"}[k]
	}, "rollout.max_parallel", "max-parallel"); err == nil || !strings.Contains(err.Error(), "RIPCORD_ROLLOUT_MAX_PARALLEL") {
		t.Errorf("a value serve would refuse: error %v, want one naming where it came from", err)
	}
}
