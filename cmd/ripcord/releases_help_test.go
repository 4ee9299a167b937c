package main

import (
	"strings"
	"testing"
)

// `releases list --state` said "only releases in this state" and named
// none: a newcomer learnt them from the server's refusal of a guess.
func TestReleasesListHelpNamesTheStates(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	code, stdout, stderr := ripcord(t, nil, "releases", "list", "-h")
	want := "only releases in this state: opened, progressing, paused, healthy, degraded, aborted, failed, superseded, rolled-back"
	if code != 0 || !strings.Contains(stdout, want) {
		t.Errorf("ripcord releases list -h: exit %d\nstdout: %s\nstderr: %s\nwant it to say %q", code, stdout, stderr, want)
	}
}
