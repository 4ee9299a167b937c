package main

import (
	"strings"
	"testing"
)

// An unknown command was answered with the list of commands alone: a
// newcomer's `ripcord --version`, `ripcord --server URL releases list` or
// `ripcord rollbak` was not told what it most likely meant.
func TestUnknownCommandSaysWhatWasMeant(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--version"}, `ripcord: unknown command "--version"; the version is a command: ripcord version`},
		{[]string{"-v"}, `ripcord: unknown command "-v"; the version is a command: ripcord version`},
		{[]string{"--server", "http://127.0.0.1:1", "releases", "list"}, `ripcord: unknown command "--server"; a command comes first, then its flags: ripcord <command> --server ...`},
		{[]string{"--server=http://127.0.0.1:1", "releases"}, `ripcord: unknown command "--server=http://127.0.0.1:1"; a command comes first, then its flags: ripcord <command> --server ...`},
		{[]string{"rollbak"}, `ripcord: unknown command "rollbak"; did you mean ripcord rollback?`},
		{[]string{"release"}, `ripcord: unknown command "release"; did you mean ripcord releases?`},
		{[]string{"deploy"}, `ripcord: unknown command "deploy"`},
	}
	for _, c := range cases {
		code, stdout, stderr := ripcord(t, nil, c.args...)
		first, _, _ := strings.Cut(stderr, "\n")
		if code != 2 || stdout != "" || first != c.want || !strings.Contains(stderr, "commands:") {
			t.Errorf("ripcord %s: exit %d, stdout %q, stderr %q;\nwant 2, nothing, %q and the list of commands", strings.Join(c.args, " "), code, stdout, stderr, c.want)
		}
	}
}
