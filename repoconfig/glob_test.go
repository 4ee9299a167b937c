package repoconfig

import "testing"

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		name, pattern, job string
		want               bool
	}{
		{"prefix glob", "build*", "build-linux", true},
		{"star crosses the slash of reusable-workflow job names", "build*", "build / compile", true},
		{"job names are matched without regard to case", "build*", "Build (ubuntu, 1.22)", true},
		{"glob must match the whole name, not a substring", "test*", "unit-test", false},
		{"question mark is one character", "e2e-?", "e2e-1", true},
		{"question mark is not two characters", "e2e-?", "e2e-12", false},
		{"character set", "shard-[0-9]", "shard-7", true},
		{"negated set", "shard-[!0-9]", "shard-7", false},
		{"regexp metacharacters are literal", "deploy (prod)", "deploy (prod)", true},
		{"dot is literal, not any character", "a.b", "axb", false},
		{"escaped star is literal", `lint\*`, "lint*", true},
		{"escaped star does not glob", `lint\*`, "lint-go", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MatchGlob(tt.pattern, tt.job); got != tt.want {
				t.Errorf("MatchGlob(%q, %q) = %v", tt.pattern, tt.job, got)
			}
		})
	}
}

func TestCompileGlobRejects(t *testing.T) {
	for _, p := range []string{"", "build[", `trailing\`, "[z-a]"} {
		if _, err := CompileGlob(p); err == nil {
			t.Errorf("CompileGlob(%q) accepted an invalid pattern", p)
		}
	}
	if MatchGlob("build[", "build[") {
		t.Error("an invalid pattern matched")
	}
}
