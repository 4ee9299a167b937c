package config

import (
	"slices"
	"strings"
	"testing"
)

func TestOutboundAllow(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		env  map[string]string
		want []string
	}{
		{"the default: the fixed rules alone", nil, nil, nil},
		{"a list in the file", nil, map[string]string{"RIPCORD_CONFIG": writeFile(t, "ripcord.yml",
			"outbound:\n  allow: [prometheus.internal, 10.0.0.0/8]\n")}, []string{"prometheus.internal", "10.0.0.0/8"}},
		{"the environment", nil, map[string]string{"RIPCORD_OUTBOUND_ALLOW": "prometheus.internal, 10.0.0.0/8"}, []string{"prometheus.internal", "10.0.0.0/8"}},
		{"the flag", []string{"--outbound-allow", "192.168.1.5"}, nil, []string{"192.168.1.5"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := load(t, c.args, c.env)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cfg.Outbound.Allow, c.want) {
				t.Errorf("outbound.allow %q, want %q", cfg.Outbound.Allow, c.want)
			}
		})
	}
	for _, bad := range []string{"http://prometheus:9090", "prometheus:9090", "10.0.0.0/40"} {
		_, err := load(t, nil, map[string]string{"RIPCORD_OUTBOUND_ALLOW": bad})
		if err == nil || !strings.Contains(err.Error(), "outbound.allow") || !strings.Contains(err.Error(), bad) {
			t.Errorf("outbound.allow %q: error %v, want one naming the setting and the value", bad, err)
		}
	}
}
