package rollbackpr_test

import (
	"github.com/ripcord/ripcord/rollbackpr"
	"strings"
	"testing"
)

const fullSHA = "1A2B3C4D5E6F708192a3b4c5d6e7f8091a2b3c4d"

func TestBranchName(t *testing.T) {
	tests := []struct {
		name, env, rev, want string
	}{
		{"plain environment", "prod", fullSHA, "release-rollback-prod-1a2b3c4d"},
		{"short revision kept whole", "staging", "abcdef12", "release-rollback-staging-abcdef12"},
		{"slash would make two ref components", "eu/prod", fullSHA, "release-rollback-eu-prod-1a2b3c4d"},
		{"space and colon are not allowed in refs", "eu west: prod", fullSHA, "release-rollback-eu-west-prod-1a2b3c4d"},
		{"double dot is not allowed in refs", "a..b", fullSHA, "release-rollback-a.b-1a2b3c4d"},
		{"reflog syntax is not allowed in refs", "prod@{1}", fullSHA, "release-rollback-prod-1-1a2b3c4d"},
		{"git's forbidden characters", "p~r^o:d?*[\\", fullSHA, "release-rollback-p-r-o-d-1a2b3c4d"},
		{"leading dot and dash", ".-prod", fullSHA, "release-rollback-prod-1a2b3c4d"},
		{"lock suffix inside the name is harmless", "prod.lock", fullSHA, "release-rollback-prod.lock-1a2b3c4d"},
		{"non-ASCII letters become dashes", "prüfung", fullSHA, "release-rollback-pr-fung-1a2b3c4d"},
		{"control characters", "pr\x00o\x7fd\n", fullSHA, "release-rollback-pr-o-d-1a2b3c4d"},
		{"nothing usable left", "@@@", fullSHA, "release-rollback-x-1a2b3c4d"},
		{"revision with a dot cannot end in .lock", "prod", "x.lock", "release-rollback-prod-x-lock"},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := rollbackpr.BranchName(tt.env, tt.rev)
			if got != tt.want {
				t.Errorf("BranchName(%q, %q) = %q, want %q", tt.env, tt.rev, got, tt.want)
			}
			if out, err := git(t, dir, "", "check-ref-format", "--branch", got); err != nil {
				t.Errorf("git rejects %q: %v", got, err)
			} else if strings.TrimSpace(out) != got {
				t.Errorf("git normalised %q to %q", got, out)
			}
			if rollbackpr.BranchName(tt.env, tt.rev) != got {
				t.Errorf("BranchName is not deterministic for %q", tt.env)
			}
		})
	}
}

func TestBranchNameAlwaysValidForGit(t *testing.T) {
	// Every printable ASCII character and a few hostile sequences, one at a time, in the
	// middle and at both ends of the environment name.
	dir := t.TempDir()
	var envs []string
	for c := byte(0x20); c < 0x7f; c++ {
		envs = append(envs, string(c), "a"+string(c)+"b", string(c)+"a", "a"+string(c))
	}
	envs = append(envs, "..", "a/../b", "@", "@{", "a.lock", "/", "//", "a//b", ".", "...")
	var names []string
	for _, env := range envs {
		names = append(names, rollbackpr.BranchName(env, fullSHA), rollbackpr.OwnBranchName(env, fullSHA, env))
	}
	// git check-ref-format takes one name per run: run it once per distinct name.
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		if _, err := git(t, dir, "", "check-ref-format", "--branch", n); err != nil {
			t.Errorf("git rejects %q: %v", n, err)
		}
	}
}

func TestTitle(t *testing.T) {
	if got, want := rollbackpr.Title("checkout", "prod", fullSHA), "Rollback: checkout prod to 1a2b3c4d"; got != want {
		t.Errorf("Title = %q, want %q", got, want)
	}
	if got, want := rollbackpr.Title("check\nout", "prod", "abcdef12"), "Rollback: check out prod to abcdef12"; got != want {
		t.Errorf("a newline in the app name must not split the title: got %q, want %q", got, want)
	}
}

// A rollback branch says which revision it rolls back to, in either of its names; other
// branches, and other environments' rollback branches, say nothing.
func TestBranchTarget(t *testing.T) {
	own := rollbackpr.OwnBranchName("eu/prod", fullSHA, "r3:prod-eu/prod")
	for _, tt := range []struct {
		branch, env, want string
		ok                bool
	}{
		{rollbackpr.BranchName("prod", fullSHA), "prod", "1a2b3c4d", true},
		{rollbackpr.BranchName("eu/prod", fullSHA), "eu/prod", "1a2b3c4d", true},
		{own, "eu/prod", "1a2b3c4d", true},
		{rollbackpr.BranchName("prod-eu", fullSHA), "prod", "", false},
		{rollbackpr.BranchName("prod", fullSHA), "staging", "", false},
		{rollbackpr.BranchName("prod", fullSHA) + "-fix", "prod", "", false},
		{"release-rollback-prod-tomorrow", "prod", "", false},
		{"feature/rollback", "prod", "", false},
	} {
		got, ok := rollbackpr.BranchTarget(tt.branch, tt.env)
		if got != tt.want || ok != tt.ok {
			t.Errorf("BranchTarget(%q, %q) = %q, %v; want %q, %v", tt.branch, tt.env, got, ok, tt.want, tt.ok)
		}
	}
}

// An environment named at length (YAML keys have no limit) still gets a branch the real
// git can store: git keeps a branch as one file and refuses a name too long for one
// ("File name too long"), which GitHub, storing refs with git, would refuse too. Two long
// names that differ only at their ends get branches of their own, and each branch still
// says which revision it rolls back to.
func TestBranchNameFitsWhatGitCanStore(t *testing.T) {
	dir := t.TempDir()
	if _, err := git(t, dir, "", "init", "-q"); err != nil {
		t.Fatal(err)
	}
	if _, err := git(t, dir, "", "commit", "-q", "--allow-empty", "-m", "base"); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("prod-eu-west-", 30)
	envs := []string{long + "a", long + "b", strings.Repeat("prüfung ", 60), strings.Repeat("x", 600)}
	seen := map[string]string{}
	for _, env := range envs {
		for _, name := range []string{rollbackpr.BranchName(env, fullSHA), rollbackpr.OwnBranchName(env, fullSHA, "r3:prod-eu/prod")} {
			if _, err := git(t, dir, "", "branch", name); err != nil {
				t.Errorf("git cannot store the branch for an environment of %d characters: %v", len(env), err)
			}
			if other, ok := seen[name]; ok {
				t.Errorf("environments %q and %q get one branch %s", other, env, name)
			}
			seen[name] = env
			if len(name) > 250 {
				t.Errorf("branch %s is %d bytes, over the 250 git can lock", name, len(name))
			}
			if got, ok := rollbackpr.BranchTarget(name, env); !ok || got != "1a2b3c4d" {
				t.Errorf("BranchTarget(%s) = %q, %v; want 1a2b3c4d", name, got, ok)
			}
		}
	}
	if got := rollbackpr.BranchName(strings.Repeat("e", 212), fullSHA); got != "release-rollback-"+strings.Repeat("e", 212)+"-1a2b3c4d" {
		t.Errorf("an environment that fits is cut: %s", got)
	}
}
