package rollbackpr_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ripcord/ripcord/rollbackpr"
)

// A name within the bound is kept as it is; a longer one keeps its start,
// stays within the bound, is valid UTF-8 however its characters fall, and
// ends with eight hex digits of the SHA-256 of the whole name, so that two
// names that differ only past the cut stay apart.
func TestShorten(t *testing.T) {
	if got := rollbackpr.Shorten("rollback-1a2b3c4d-abcdef:prod-eu/prod", 253); got != "rollback-1a2b3c4d-abcdef:prod-eu/prod" {
		t.Errorf("a short name changed: %q", got)
	}
	exact := strings.Repeat("a", 253)
	if got := rollbackpr.Shorten(exact, 253); got != exact {
		t.Errorf("a name at the bound changed: %q", got)
	}
	long := "rollback-1a2b3c4d-abcdef:" + strings.Repeat("prod-eu-west-", 25)
	seen := map[string]string{}
	for _, s := range []string{long + "a", long + "b", "rollback-1a2b3c4d-abcdef:" + strings.Repeat("prüfung", 60)} {
		got := rollbackpr.Shorten(s, 253)
		sum := sha256.Sum256([]byte(s))
		switch {
		case len(got) > 253 || !utf8.ValidString(got):
			t.Errorf("Shorten of %d bytes = %d bytes (valid UTF-8: %v), want at most 253", len(s), len(got), utf8.ValidString(got))
		case !strings.HasPrefix(got, "rollback-1a2b3c4d-abcdef:prod") && !strings.HasPrefix(got, "rollback-1a2b3c4d-abcdef:prüf"):
			t.Errorf("Shorten = %q, want the name's start kept", got)
		case !strings.HasSuffix(got, "-"+hex.EncodeToString(sum[:4])):
			t.Errorf("Shorten = %q, want it to end with the hash of the whole name", got)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("%q and %q shorten to one name %q", other, s, got)
		}
		seen[got] = s
	}
}

// The branch of an environment named at length is the one it was before
// Shorten was taken out of it: a rollback started before finds its branch.
func TestLongEnvironmentBranchUnchanged(t *testing.T) {
	env := strings.Repeat("prod-eu-west-", 30)
	sum := sha256.Sum256([]byte(env))
	start := env[:250-len("release-rollback-")-len("-12345678")-len("-of-12345678")-len("-12345678")]
	want := "release-rollback-" + strings.TrimRight(start, ".-") + "-" + hex.EncodeToString(sum[:4]) + "-1a2b3c4d"
	if got := rollbackpr.BranchName(env, fullSHA); got != want {
		t.Errorf("BranchName = %q, want %q", got, want)
	}
}
