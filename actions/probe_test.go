package actions

import "testing"

func TestProbeModeRefusesBadInputs(t *testing.T) {
	t.Parallel()
	f := newFakes(t)
	probe := map[string]string{"mode": "probe", "server": f.rcURL, "rollout-id": "ro-1", "reading": "0.0.-1.1",
		"probes": `[{"url":"http://127.0.0.1:1/healthz","host":"127.0.0.1:1","expect_status":200}]`}
	for _, tc := range []struct {
		name   string
		inputs map[string]string
		want   string
	}{
		{"a mode that does not exist", with(probe, "mode", "probes"), `input mode must be fact or probe, got "probes"`},
		{"no reading to post for", with(probe, "reading", ""), "input reading is required with mode probe"},
		{"no rollout", with(probe, "rollout-id", ""), "input rollout-id is required with mode probe"},
		{"probes that are not a JSON list", with(probe, "probes", "http://x/healthz"), "input probes must be the JSON list"},
		{"a probe without url", with(probe, "probes", `[{"host":"x"}]`), "probes[0] has no http(s) url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, m := range failModes {
				r := runAction(t, f, with(tc.inputs, "fail-on-error", m.failOnError), nil)
				checkFailed(t, r, m.code, m.kind, tc.want)
			}
		})
	}
	if n := len(f.token.got()); n != 0 {
		t.Errorf("%d token requests for inputs refused before anything was sent", n)
	}
}
