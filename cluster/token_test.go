package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The agent presents one token. A token file with several (the server's
// file during a rotation, mounted by mistake) is refused saying so, rather
// than sent whole as a header no HTTP client will send.
func TestTokenFileHoldsOneToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	tok := TokenFile(path)
	for body, want := range map[string]string{"tok-new\n": "", "\n  tok-new \n\n": "", "tok-old\ntok-new\n": "2 tokens", "\n": "empty"} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := tok()
		switch {
		case want == "" && (err != nil || got != "tok-new"):
			t.Errorf("%q: %q, %v; want tok-new", body, got, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: %q, %v; want an error naming %s", body, got, err, want)
		}
	}
}
