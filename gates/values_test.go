package gates

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/repoconfig"
)

var fields = repoconfig.Fields{Image: "image.repository", Digest: "image.digest", ReleaseID: "release.id"}

const goodRelease = `# prod release of checkout
release:
  id: "r42"
image:
  repository: reg.example.com/checkout
  digest: sha256:3333333333333333333333333333333333333333333333333333333333333333
`

func TestValuesBuiltinSchema(t *testing.T) {
	cases := []struct {
		name     string
		file     string
		want     Outcome
		line     int
		contains string
	}{
		{"valid release file", goodRelease, Pass, 0, ""},
		{"digest that is not sha256", strings.Replace(goodRelease, "sha256:3333", "md5:3333", 1), Fail, 6, "/image/digest"},
		{"missing release id", strings.Replace(goodRelease, "  id: \"r42\"\n", "  name: x\n", 1), Fail, 3, "id"},
		{"file that is not YAML", "image: [unclosed\n", Fail, 0, "not valid YAML"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Values{Fields: fields}.Evaluate(context.Background(), Subject{ReleaseFile: "deploy/prod.yaml", ReleaseFileContent: []byte(c.file)})
			if v.Outcome != c.want {
				t.Fatalf("outcome %s, want %s (%s %+v)", v.Outcome, c.want, v.Summary, v.Findings)
			}
			if c.want == Pass {
				return
			}
			all := v.Summary
			for _, f := range v.Findings {
				all += " " + f.Message
				if f.Path != "deploy/prod.yaml" {
					t.Errorf("finding on %q, want the release file", f.Path)
				}
			}
			if !strings.Contains(all, c.contains) {
				t.Errorf("findings %q lack %q", all, c.contains)
			}
			if c.line > 0 && (len(v.Findings) == 0 || v.Findings[0].Line != c.line) {
				t.Errorf("findings %+v, want the first on line %d", v.Findings, c.line)
			}
		})
	}
}

func TestValuesConfiguredSchema(t *testing.T) {
	schema := `{"type":"object","properties":{"replicas":{"type":"integer","maximum":10}},"required":["replicas"]}`
	g := Values{SchemaPath: "deploy/values.schema.json", Schema: []byte(schema), Fields: fields}
	v := g.Evaluate(context.Background(), Subject{ReleaseFile: "r.yaml", ReleaseFileContent: []byte("image: x\nreplicas: 40\n")})
	if v.Outcome != Fail || len(v.Findings) != 1 || v.Findings[0].Line != 2 {
		t.Fatalf("replicas over the maximum: %+v", v)
	}
	out := Render(NameValues, Integrity, v, Subject{})
	if len(out.Annotations) != 1 || out.Annotations[0].Line != 2 || out.Annotations[0].Level != "failure" {
		t.Fatalf("annotations %+v, want one failure on line 2", out.Annotations)
	}
	if v := g.Evaluate(context.Background(), Subject{ReleaseFile: "r.yaml", ReleaseFileContent: []byte("replicas: 3\n")}); v.Outcome != Pass {
		t.Fatalf("valid values: %+v", v)
	}
}

func TestValuesSchemaProblemsFailClosed(t *testing.T) {
	cases := []struct {
		name string
		g    Values
	}{
		{"schema file unreadable", Values{SchemaPath: "s.json", SchemaErr: errors.New("404 Not Found")}},
		{"schema not JSON", Values{SchemaPath: "s.json", Schema: []byte("type: object")}},
		{"schema not a schema", Values{SchemaPath: "s.json", Schema: []byte(`{"type": 12}`)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := c.g.Evaluate(context.Background(), Subject{ReleaseFile: "r.yaml", ReleaseFileContent: []byte("a: 1\n")})
			if v.Outcome != Error || !strings.Contains(v.Summary, "s.json") {
				t.Fatalf("got %+v, want an error naming the schema", v)
			}
		})
	}
}

func TestReadReleaseAndChanges(t *testing.T) {
	r, err := ReadRelease([]byte(goodRelease), fields)
	if err != nil || r.Digest != newDigest || r.Image != "reg.example.com/checkout" || r.ReleaseID != "r42" {
		t.Fatalf("ReadRelease = %+v, %v", r, err)
	}
	reformatted := "# comment moved\n" + goodRelease
	if ChangesRelease([]byte(goodRelease), []byte(reformatted), fields) {
		t.Error("a comment-only edit is not a release")
	}
	if !ChangesRelease([]byte(goodRelease), []byte(strings.Replace(goodRelease, "3333", "4444", 1)), fields) {
		t.Error("a new digest is a release")
	}
	if !ChangesRelease(nil, []byte(goodRelease), fields) {
		t.Error("a new release file is a release")
	}
}

func TestBatchesRespectGitHubsLimit(t *testing.T) {
	as := make([]Annotation, 120)
	b := Batches(as)
	if len(b) != 3 || len(b[0]) != 50 || len(b[2]) != 20 {
		t.Fatalf("batches of %d: %d/%d…", len(as), len(b), len(b[0]))
	}
}

func TestSummaryStaysUnderGitHubsLimit(t *testing.T) {
	fs := make([]Finding, 5000)
	for i := range fs {
		fs[i] = Finding{Severity: "high", ID: "CVE-2024-0001", Message: strings.Repeat("long text ", 10)}
	}
	out := Render(NameImageScan, Content, Failed("many", fs...), Subject{})
	if len(out.Summary) > MaxSummary || !strings.Contains(out.Summary, "more findings not shown") {
		t.Fatalf("summary of %d bytes; want ≤ %d with a truncation note", len(out.Summary), MaxSummary)
	}
}
