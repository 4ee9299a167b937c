package actions

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// curlRecorder puts a curl first on PATH that logs its arguments, one call
// a line, and runs the real curl. It returns the job environment that uses
// it and a function reading the log.
func curlRecorder(t *testing.T) (map[string]string, func() []string) {
	t.Helper()
	real, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	shim := "#!/usr/bin/env bash\nprintf '%s\\n' \"$*\" >>'" + log + "'\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "curl"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"PATH": dir + ":" + os.Getenv("PATH")}, func() []string {
		raw, _ := os.ReadFile(log)
		return strings.Split(strings.TrimSpace(string(raw)), "\n")
	}
}

// timeout bounds how long a ripcord outage holds the deploy job (6 ×
// timeout + 6 s), so it has a ceiling: a larger value is lowered to 60
// seconds with a warning, and the step goes on.
func TestTimeoutAbove60IsLoweredTo60(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		timeout, used string
		warn          bool
	}{
		{"5", "5", false},
		{"60", "60", false},
		{"61", "60", true},
		{"3600", "60", true},
		{"99999999999999999999999", "60", true}, // past bash's integers
	} {
		t.Run(tc.timeout, func(t *testing.T) {
			f := newFakes(t)
			job, calls := curlRecorder(t)
			r := runAction(t, f, with(baseInputs(f), "timeout", tc.timeout), job)
			if r.code != 0 || !strings.Contains(r.outputs, "fact-id=9c1f0e\n") {
				t.Fatalf("exit %d outputs %q: the fact was not posted\n%s%s", r.code, r.outputs, r.stdout, r.stderr)
			}
			msg, warned := annotation(r.stdout, "warning")
			if warned != tc.warn {
				t.Errorf("warning %q, want one: %v", msg, tc.warn)
			}
			if want := `input timeout is at most 60 seconds, got "` + tc.timeout + `": using 60`; tc.warn && msg != want {
				t.Errorf("warning %q, want %q", msg, want)
			}
			got := calls()
			if len(got) != 2 {
				t.Fatalf("curl ran %d times, want 2 (token and post): %q", len(got), got)
			}
			for _, c := range got {
				want := "--connect-timeout " + tc.used + " --max-time " + tc.used + " "
				if !strings.Contains(c, want) {
					t.Errorf("curl %q, want %q", c, want)
				}
			}
		})
	}
}

// Mode probe sends each probe with the same timeout, and so the same ceiling.
func TestProbeModeLowersTimeoutTo60(t *testing.T) {
	t.Parallel()
	f := newFakes(t)
	job, calls := curlRecorder(t)
	// No rollout endpoint: the post fails (and only warns) after the probe ran.
	r := runAction(t, f, map[string]string{"mode": "probe", "server": f.rcURL, "rollout-id": "ro-1", "reading": "0.0.-1.1",
		"timeout": "120", "probes": `[{"url":"http://127.0.0.1:1/healthz","host":"127.0.0.1:1","expect_status":200}]`}, job)
	if msg, _ := annotation(r.stdout, "warning"); msg != `input timeout is at most 60 seconds, got "120": using 60` {
		t.Errorf("first warning %q, want the timeout's\n%s", msg, r.stdout)
	}
	got := calls()
	if len(got) == 0 || !strings.Contains(got[0], "--connect-timeout 60 --max-time 60 http://127.0.0.1:1/healthz") {
		t.Errorf("the probe's curl %q, want timeout 60", got)
	}
}
