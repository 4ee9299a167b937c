package main

import (
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/testnet"
)

// README promises that a start that cannot use its database says so in
// one line naming the `database` setting: `ripcord migrate` against a
// PostgreSQL that refuses connections (a closed loopback port) prints
// that line, and only that, without the URL's password.
func TestMigrateAgainstARefusingPostgreSQLIsOneLine(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	addr := testnet.RefusedAddr(t)
	code, out, errOut := ripcord(t, []string{"RIPCORD_DATABASE=postgres://ripcord:hunter2@" + addr + "/ripcord"}, "migrate")
	if code != 1 {
		t.Fatalf("ripcord migrate: exit %d, want 1\n%s%s", code, out, errOut)
	}
	line := strings.TrimSuffix(errOut, "\n")
	if strings.Contains(line, "\n") {
		t.Errorf("ripcord migrate wrote several lines, want one:\n%s", errOut)
	}
	for _, want := range []string{"ripcord migrate: database:", "PostgreSQL at " + addr, "connection refused", "RIPCORD_DATABASE"} {
		if !strings.Contains(line, want) {
			t.Errorf("ripcord migrate does not say %q: %s", want, line)
		}
	}
	if strings.Contains(errOut, "hunter2") {
		t.Errorf("ripcord migrate shows the password: %s", errOut)
	}
}
