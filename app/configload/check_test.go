package configload

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/repoconfig"
)

func TestRenderCheck(t *testing.T) {
	src := Source{Repository: "acme/checkout", Path: repoconfig.Path, SHA: "abc"}
	t.Run("a valid config passes and says what it covers", func(t *testing.T) {
		cfg, problems := repoconfig.Load([]byte(valid))
		if problems != nil {
			t.Fatal(problems)
		}
		out := RenderCheck(Result{Found: true, Source: src, Config: cfg})
		if out.Conclusion != "success" || !strings.Contains(out.Summary, "**checkout** in **staging**: workflows deploy.yml") || len(out.Annotations) != 0 {
			t.Errorf("got %+v", out)
		}
	})
	t.Run("each problem fails the check at its line", func(t *testing.T) {
		_, problems := repoconfig.Load([]byte("version: 2\nretries: 3\n"))
		out := RenderCheck(Result{Found: true, Source: src, Problems: problems})
		if out.Conclusion != "failure" || out.Title != "2 problems in .github/ripcord.yml" || len(out.Annotations) != 2 {
			t.Fatalf("got %+v", out)
		}
		a := out.Annotations[1]
		if a.GetPath() != repoconfig.Path || a.GetStartLine() != 2 || a.GetEndLine() != 2 || a.GetAnnotationLevel() != "failure" || a.GetTitle() != "retries" {
			t.Errorf("annotation %s", github.Stringify(a))
		}
	})
	t.Run("a syntax error without a column still gets a valid annotation", func(t *testing.T) {
		_, problems := repoconfig.Load([]byte("version: [1\n"))
		out := RenderCheck(Result{Found: true, Source: src, Problems: problems})
		a := out.Annotations[0]
		if a.GetStartLine() < 1 || a.StartColumn != nil || a.EndColumn != nil {
			t.Errorf("annotation %s: want a line >= 1 and no column", github.Stringify(a))
		}
	})
	t.Run("annotations stop at GitHub's 50 per request", func(t *testing.T) {
		var ps []repoconfig.Problem
		for i := range 60 {
			ps = append(ps, repoconfig.Problem{Path: fmt.Sprint("k", i), Line: i + 1, Column: 1, Message: "bad"})
		}
		out := RenderCheck(Result{Found: true, Source: src, Problems: ps})
		if len(out.Annotations) != maxAnnotations || !strings.Contains(out.Summary, "k59") {
			t.Errorf("%d annotations; summary lists all: %v", len(out.Annotations), strings.Contains(out.Summary, "k59"))
		}
	})
}
