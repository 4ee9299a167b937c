package main

import (
	"os"
	"strings"
	"testing"
)

// wavesYML is a valid .github/ripcord.yml whose prod rolls out in waves,
// in three stages.
const wavesYML = `version: 1
apps:
  shop:
    environments:
      prod:
        cluster: prod-eu
        targets:
          - {host: a1, labels: {region: eu-1, az: eu-1a, canary: "true"}}
          - {host: a2, labels: {region: eu-1, az: eu-1a}}
          - {host: b1, labels: {region: eu-1, az: eu-1b}}
        rollout:
          waves:
            - {name: canary, select: "canary=true"}
            - {name: eu-1, select: "region=eu-1, canary!=true", by: az}
`

// wavesStages is the stage line validate prints for wavesYML, as seed 001
// writes it.
const wavesStages = "apps.shop.environments.prod.rollout.stages: canary, eu-1/eu-1a, eu-1/eu-1b"

// validateOnly runs `ripcord validate args...` with no RIPCORD_* variable
// of the test's environment (validate would name an unknown one on
// stdout), and returns its exit code, stdout and stderr.
func validateOnly(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var environ []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RIPCORD_") {
			environ = append(environ, kv)
		}
	}
	return runBinary(t, environ, append([]string{"validate"}, args...)...)
}

// `ripcord validate` of several files says which file each line of its
// output is about: the stage lines of a valid file were printed bare, as
// for one file, so whoever validated a folder could not tell which file
// they described. One file keeps seed 001's line as it is.
func TestValidateSeveralFilesNamesTheFileOfEachLine(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	write := fileWriter(t, dir)
	good := write("good.yml", wavesYML)
	// Its canary wave selects no target: two problems, and no stages.
	bad := write("bad.yml", strings.Replace(wavesYML, `select: "canary=true"`, `select: "canary=nope"`, 1))
	// Another valid file with other stages, so the stage lines differ only
	// by the file they are about.
	other := write("other.yml", strings.Replace(wavesYML, `, by: az}`, `}`, 1))

	// One file: seed 001's line exactly, with nothing before it.
	code, out, errOut := validateOnly(t, good)
	if code != 0 || out != wavesStages+"\n" {
		t.Errorf("one valid file: exit %d, stdout %q (%s); want 0 and exactly %q", code, out, errOut, wavesStages+"\n")
	}

	// Two files, one bad: the bad one's problems name it, once; the good
	// one's stage line names the good one; nothing else is printed.
	code, out, errOut = validateOnly(t, good, bad)
	if code != 1 {
		t.Errorf("a valid file and a bad one: exit %d, want 1\n%s%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var ofGood, ofBad int
	for _, l := range lines {
		switch {
		case l == good+": "+wavesStages:
			ofGood++
		case strings.HasPrefix(l, bad+":") && !strings.Contains(l, "rollout.stages") && !strings.Contains(l, bad+": "+bad):
			ofBad++
		default:
			t.Errorf("a valid file and a bad one: line %q names neither file as its own", l)
		}
	}
	if ofGood != 1 || ofBad != 2 {
		t.Errorf("a valid file and a bad one: %d stage lines of %s and %d problems of %s, want 1 and 2:\n%s", ofGood, good, ofBad, bad, out)
	}
	if !strings.Contains(out, bad+":13:38: apps.shop.environments.prod.rollout.waves[0].select: wave canary selects no target") {
		t.Errorf("a valid file and a bad one: stdout %q does not give the bad wave as path:line:column: key: message", out)
	}
	if !strings.Contains(errOut, good+": valid") || strings.Contains(errOut, bad+": valid") {
		t.Errorf("a valid file and a bad one: stderr %q; want the valid one, and only it, said valid", errOut)
	}

	// Two valid files: each stage line names its own file, in the order
	// the files were given.
	code, out, errOut = validateOnly(t, good, other)
	want := good + ": " + wavesStages + "\n" +
		other + ": apps.shop.environments.prod.rollout.stages: canary, eu-1\n"
	if code != 0 || out != want {
		t.Errorf("two valid files: exit %d, stdout %q (%s); want 0 and %q", code, out, errOut, want)
	}
}
