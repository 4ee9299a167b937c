package actions

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/ripcord/ripcord/internal/oidcauth/oidctest"
)

// readmeSteps are the `uses: ripcord/ripcord@v1` steps of the first yaml
// block of file that has any, a workflow or a list of steps.
func readmeSteps(t *testing.T, file, after string) []map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), file))
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	if i := strings.Index(text, after); i >= 0 {
		text = text[i:]
	} else {
		t.Fatalf("%s has no %q", file, after)
	}
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(text, -1) {
		type step struct {
			Uses string            `yaml:"uses"`
			With map[string]string `yaml:"with"`
		}
		var steps []step
		var wf struct {
			Jobs map[string]struct{ Steps []step }
		}
		if yaml.Unmarshal([]byte(m[1]), &steps) != nil {
			if err := yaml.Unmarshal([]byte(m[1]), &wf); err != nil {
				t.Fatalf("%s: a yaml block is neither a workflow nor steps: %v\n%s", file, err, m[1])
			}
			for _, j := range wf.Jobs {
				steps = append(steps, j.Steps...)
			}
		}
		var out []map[string]string
		for _, s := range steps {
			if s.Uses == "ripcord/ripcord@v1" {
				out = append(out, s.With)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	t.Fatalf("%s has no yaml block with a ripcord/ripcord@v1 step after %q", file, after)
	return nil
}

// evaluate replaces each ${{ … }} in s as GitHub's expression syntax would,
// for the subset the READMEs use: context paths, 'strings', == and !=, &&
// and || (which give one of their operands; the empty string is falsy).
func evaluate(t *testing.T, s string, ctx map[string]string) string {
	t.Helper()
	return regexp.MustCompile(`\$\{\{(.*?)\}\}`).ReplaceAllStringFunc(s, func(expr string) string {
		toks := regexp.MustCompile(`'[^']*'|==|!=|&&|\|\||[A-Za-z_][A-Za-z0-9_.-]*|\S`).FindAllString(expr[3:len(expr)-2], -1)
		e := &exprParser{t: t, toks: toks, ctx: ctx}
		v := e.or()
		if e.i != len(toks) {
			t.Fatalf("cannot evaluate %s", expr)
		}
		return fmt.Sprint(v)
	})
}

type exprParser struct {
	t    *testing.T
	toks []string
	i    int
	ctx  map[string]string
}

func truthy(v any) bool { return v != "" && v != false }

func (p *exprParser) or() any {
	v := p.and()
	for p.i < len(p.toks) && p.toks[p.i] == "||" {
		p.i++
		r := p.and()
		if !truthy(v) {
			v = r
		}
	}
	return v
}

func (p *exprParser) and() any {
	v := p.cmp()
	for p.i < len(p.toks) && p.toks[p.i] == "&&" {
		p.i++
		r := p.cmp()
		if truthy(v) {
			v = r
		}
	}
	return v
}

func (p *exprParser) cmp() any {
	v := p.atom()
	if p.i < len(p.toks) && (p.toks[p.i] == "==" || p.toks[p.i] == "!=") {
		op := p.toks[p.i]
		p.i++
		r := p.atom()
		return (strings.EqualFold(fmt.Sprint(v), fmt.Sprint(r))) == (op == "==")
	}
	return v
}

func (p *exprParser) atom() any {
	if p.i >= len(p.toks) {
		p.t.Fatalf("expression ends early: %v", p.toks)
	}
	tok := p.toks[p.i]
	p.i++
	if strings.HasPrefix(tok, "'") {
		return strings.Trim(tok, "'")
	}
	v, ok := p.ctx[tok]
	if !ok {
		p.t.Fatalf("the README uses %s, which this test does not know", tok)
	}
	return v
}

// TestReadmeExamplesRunAsWritten runs the action with the inputs of the
// READMEs' examples, expressions evaluated, against a real server: the
// usage workflow of actions/README.md for a deploy that succeeds and one
// that fails, and the step in the README's action section.
func TestReadmeExamplesRunAsWritten(t *testing.T) {
	t.Parallel()
	issuer := oidctest.NewIssuer(t)
	url := realServer(t, issuer)
	installOn(t, url, "acme/checkout")
	f := newFakes(t)
	token := issuer.Token(t, map[string]any{"repository": "acme/checkout"}, oidctest.WithAudience(url))
	f.token.script(reply{200, `{"count":1,"value":"` + token + `"}`})
	const sha = "4f9c2d1e8b7a6c5d4e3f2a1b0c9d8e7f6a5b4c3d" // runAction's GITHUB_SHA

	run := func(t *testing.T, with map[string]string, ctx map[string]string) run {
		t.Helper()
		in := map[string]string{}
		for k, v := range with {
			in[k] = evaluate(t, v, ctx)
		}
		if in["server"] != "https://ripcord.example.com" {
			t.Fatalf("server %q, want the README's https://ripcord.example.com", in["server"])
		}
		in["server"] = url
		in["fail-on-error"] = "true"
		r := runAction(t, f, in, nil)
		if r.code != 0 {
			t.Fatalf("the README's step %v failed (%d)\n%s", with, r.code, r.stdout)
		}
		return r
	}
	usage := readmeSteps(t, "actions/README.md", "## Usage")
	if len(usage) != 2 {
		t.Fatalf("actions/README.md usage has %d ripcord steps, want the first and the always() one", len(usage))
	}
	for _, jobStatus := range []string{"success", "failure", "cancelled"} {
		t.Run("actions/README.md usage, job.status "+jobStatus, func(t *testing.T) {
			ctx := map[string]string{"inputs.release": "c-" + jobStatus + ":prod-eu/prod",
				"inputs.image": "registry.example/shop/checkout:v80", "job.status": "in_progress-not-a-status"}
			run(t, usage[0], ctx)
			ctx["job.status"] = jobStatus
			r := run(t, usage[1], ctx)
			want, wantType := "state=healthy", ""
			switch jobStatus {
			case "failure":
				want, wantType = "state=failed", "deploy_failure"
			case "cancelled":
				// A cancelled deploy is no failed one: the release is called
				// off, not failed, and no longer waits as progressing.
				want = "state=aborted"
			}
			if !strings.Contains(r.outputs, want) {
				t.Errorf("outputs %q, want %s", r.outputs, want)
			}
			// The script logs the body it posts.
			_, body, _ := strings.Cut(r.stdout, "/api/v1/facts: ")
			body, _, _ = strings.Cut(body, "\n")
			fact := decodeFact(t, []byte(body))
			if fact.FailureType != wantType {
				t.Errorf("failure_type %q, want %q", fact.FailureType, wantType)
			}
			if jobStatus == "cancelled" && fact.Status != "cancelled" {
				t.Errorf("status %q, want cancelled", fact.Status)
			}
		})
	}
	t.Run("README.md action section", func(t *testing.T) {
		steps := readmeSteps(t, "README.md", "**The bundled action**")
		r := run(t, steps[0], map[string]string{"github.sha": sha})
		if !strings.Contains(r.outputs, "state=progressing") {
			t.Errorf("outputs %q, want state=progressing", r.outputs)
		}
	})
}
