package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// RIPCORD_CLUSTER_TOKEN often comes from a Secret made from a file
// (kubectl create secret --from-file), newline included: the agent sends
// the token, not the newline, which no HTTP client would send in a header.
func TestAgentTokenFromTheEnvironmentIsTrimmed(t *testing.T) {
	for env, want := range map[string]string{"eu-token\n": "eu-token", "  eu-token \r\n": "eu-token", "\n": "no token", "eu token": "one token", "": "no token"} {
		t.Setenv("RIPCORD_CLUSTER_TOKEN", env)
		tok, _, err := agentToken("", "")
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

// The agent logs where its token came from when the server answers 401,
// so that a stale RIPCORD_CLUSTER_TOKEN or a file from the wrong Secret is
// named rather than guessed at.
func TestAgentTokenSaysWhereItCameFrom(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("eu-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RIPCORD_CLUSTER_TOKEN", "eu-token")
	for _, c := range []struct{ file, fileFrom, want string }{
		{file, "flag --token-file", "file " + file + " given by flag --token-file"},
		{file, "environment variable RIPCORD_CLUSTER_TOKEN_FILE", "file " + file + " given by environment variable RIPCORD_CLUSTER_TOKEN_FILE"},
		{"", "environment variable RIPCORD_CLUSTER_TOKEN_FILE", "environment variable RIPCORD_CLUSTER_TOKEN"},
	} {
		_, from, err := agentToken(c.file, c.fileFrom)
		if err != nil || from != c.want {
			t.Errorf("agentToken(%q, %q): from %q (%v), want %q", c.file, c.fileFrom, from, err, c.want)
		}
	}
}
