package main

import (
	"strings"
	"testing"
)

// RIPCORD_CLUSTER_TOKEN often comes from a Secret made from a file
// (kubectl create secret --from-file), newline included: the agent sends
// the token, not the newline, which no HTTP client would send in a header.
func TestAgentTokenFromTheEnvironmentIsTrimmed(t *testing.T) {
	for env, want := range map[string]string{"eu-token\n": "eu-token", "  eu-token \r\n": "eu-token", "\n": "no token", "eu token": "one token", "": "no token"} {
		t.Setenv("RIPCORD_CLUSTER_TOKEN", env)
		tok, err := agentToken("")
		if strings.Contains(want, " ") {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%q: %v, want an error saying %s", env, err, want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", env, err)
			continue
		}
		if got, err := tok(); err != nil || got != want {
			t.Errorf("%q: token %q (%v), want %q", env, got, err, want)
		}
	}
}
