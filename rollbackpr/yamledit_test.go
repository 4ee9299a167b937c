package rollbackpr

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestEditReleaseFileGolden runs every case in testdata/edit: input.yaml and changes.json
// go in; want.yaml must come out byte for byte, or want_error.txt must be part of the error.
func TestEditReleaseFileGolden(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "edit", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no golden cases found: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			src := readFile(t, filepath.Join(dir, "input.yaml"))
			var changes map[string]string
			if err := json.Unmarshal(readFile(t, filepath.Join(dir, "changes.json")), &changes); err != nil {
				t.Fatalf("changes.json: %v", err)
			}
			got, err := EditReleaseFile(src, changes)
			if wantErr, ok := readOptional(t, filepath.Join(dir, "want_error.txt")); ok {
				if err == nil {
					t.Fatalf("EditReleaseFile succeeded, want error containing %q; got:\n%s", wantErr, got)
				}
				if !strings.Contains(err.Error(), strings.TrimSpace(string(wantErr))) {
					t.Fatalf("error = %q, want it to contain %q", err, strings.TrimSpace(string(wantErr)))
				}
				return
			}
			if err != nil {
				t.Fatalf("EditReleaseFile: %v", err)
			}
			want := readFile(t, filepath.Join(dir, "want.yaml"))
			if !bytes.Equal(got, want) {
				t.Fatalf("output differs from want.yaml\n--- got ---\n%s\n--- want ---\n%s", got, want)
			}
		})
	}
}

func TestEditReleaseFileMissingPathIsErrPathNotFound(t *testing.T) {
	_, err := EditReleaseFile([]byte("image:\n  repository: x\n"), map[string]string{"image.digest": "sha256:aa"})
	if !errors.Is(err, ErrPathNotFound) {
		t.Fatalf("err = %v, want ErrPathNotFound", err)
	}
}

func TestEditReleaseFileRefusesTwoPathsForOneValue(t *testing.T) {
	_, err := EditReleaseFile([]byte("a: [x]\n"), map[string]string{"a[0]": "y", "a[00]": "z"})
	if err == nil || !strings.Contains(err.Error(), "name the same value") {
		t.Fatalf("err = %v, want one about two paths naming the same value", err)
	}
}

func TestEditReleaseFileRejectsBadPaths(t *testing.T) {
	for _, path := range []string{"", "image..digest", "a[x]", "a[-1]", "a[0", ".a"} {
		t.Run(path, func(t *testing.T) {
			_, err := EditReleaseFile([]byte("a: [x]\nimage: {digest: d}\n"), map[string]string{path: "v"})
			if err == nil {
				t.Fatalf("path %q accepted", path)
			}
		})
	}
}

func TestEditReleaseFileValuesReadBackExactly(t *testing.T) {
	// Whatever the value, the edited file must read back as that string: this is the
	// property the quoting rules exist for.
	values := []string{
		"12345678", "1e10", "0x1F", "true", "no", "null", "~", "", " lead", "trail ",
		"- dash", "? q", ": c", "#hash", "a #b", "k: v", "[x]", "{y}", "*alias", "&anchor",
		"!tag", "|", ">", "'", "\"", "%", "@", "`", "a,b", "tab\there", "new\nline",
		"bell\a", "del\x7f", "nel\u0085", "bom\ufeff", "ünï✓", "sha256:" + strings.Repeat("f", 64),
	}
	files := map[string]string{
		"plain":         "v: old\n",
		"double":        "v: \"old\"\n",
		"single":        "v: 'old'\n",
		"flow":          "w: {v: old, x: y}\n",
		"plain in list": "w: [old, y]\n",
	}
	for name, src := range files {
		for _, value := range values {
			path := "v"
			if strings.HasPrefix(src, "w: {") {
				path = "w.v"
			} else if strings.HasPrefix(src, "w: [") {
				path = "w[0]"
			}
			out, err := EditReleaseFile([]byte(src), map[string]string{path: value})
			if err != nil {
				t.Errorf("%s, %q: %v", name, value, err)
				continue
			}
			if got := readBack(t, out, path); got != value {
				t.Errorf("%s, %q: file %q reads back %q", name, value, out, got)
			}
		}
	}
}

func TestVerifyEditCatchesASpliceThatChangesANeighbour(t *testing.T) {
	// A splice whose extent runs past its scalar would eat the next key; the check after
	// the edit must refuse it rather than return the damaged file.
	src := []byte("a: x\nb: y\n")
	doc, err := parseSingleDocument(src)
	if err != nil {
		t.Fatal(err)
	}
	node := doc.Content[0].Content[1]
	bad := splice{path: "a", start: 3, end: 9, text: "z", node: node, key: doc.Content[0].Content[0], want: expected{value: "z", tag: strTag}}
	if err := verifyEdit(doc, applySplices(src, []splice{bad}), []splice{bad}); err == nil {
		t.Fatal("verifyEdit accepted an edit that removed key b")
	}
	good := bad
	good.end = 4
	if err := verifyEdit(doc, applySplices(src, []splice{good}), []splice{good}); err != nil {
		t.Fatalf("verifyEdit refused a correct edit: %v", err)
	}
}

func readBack(t *testing.T, out []byte, path string) string {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("edited file does not parse: %v\n%s", err, out)
	}
	node, _, _, err := lookup(&doc, path)
	if err != nil {
		t.Fatalf("edited file lost %s: %v", path, err)
	}
	if node.Tag != strTag {
		t.Fatalf("%s reads back as %s, want !!str; file:\n%s", path, node.Tag, out)
	}
	return node.Value
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readOptional(t *testing.T, path string) ([]byte, bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return b, true
}

func FuzzEditReleaseFile(f *testing.F) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "edit", "*"))
	for _, dir := range dirs {
		src, err := os.ReadFile(filepath.Join(dir, "input.yaml"))
		if err != nil {
			f.Fatal(err)
		}
		var changes map[string]string
		b, err := os.ReadFile(filepath.Join(dir, "changes.json"))
		if err != nil || json.Unmarshal(b, &changes) != nil {
			f.Fatalf("%s: bad changes.json", dir)
		}
		for path, value := range changes {
			f.Add(src, path, value)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte, path, value string) {
		out, err := EditReleaseFile(src, map[string]string{path: value})
		if err != nil {
			return
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(out, &doc); err != nil {
			t.Fatalf("edited file does not parse: %v", err)
		}
		node, _, _, err := lookup(&doc, path)
		if err != nil {
			t.Fatalf("edited file lost %s: %v", path, err)
		}
		if node.Value != value {
			t.Fatalf("%s reads back %q, want %q", path, node.Value, value)
		}
	})
}
