package jsonvalid

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/githubtest"
)

// cases are inputs where a validator goes wrong most easily; each is
// checked against encoding/json.Valid, the reference.
var cases = []string{
	``, ` `, `{}`, `[]`, `""`, `0`, `-0`, `1.5e10`, `1E+2`, `-1.0e-3`, `true`, `false`, `null`,
	`{"a":1}`, ` {"a" : [1, 2, {"b": null}] } `, `{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a"}`, `{"a":}`,
	`{a:1}`, `{'a':1}`, `[1 2]`, `{"a":1 "b":2}`, `01`, `-`, `1.`, `.5`, `1e`, `1e+`, `+1`, `0x10`,
	`NaN`, `Infinity`, `tru`, `truee`, `nul`, `[true false]`, `{} {}`, `"a" "b"`, `[`, `]`, `{`, `}`,
	`"abc`, `"abc\"`, `"\"`, `"\\"`, `"\/"`, `"\b\f\n\r\t"`, `"\a"`, `"\x41"`, `"\u00e9"`, `"\u00E9"`,
	`"\u00g9"`, `"\u12"`, `"\ud83d\ude80"`, `"\ud83d"`, "\"\x00\"", "\"\x1f\"", "\"\x7f\"", "\"tab\there\"",
	"\"caf\xc3\xa9\"", "\"bad utf8 \xff\xfe\"", `"0123456789abcdef0123456789abcdef"`, `"01234567\"`,
	`"0123456\\"`, `"01234567\\"`, "\"0123456\x01789\"", `"https://api.github.com/repos/acme/checkout/{archive_format}{/ref}"`,
	"[\n\t1\r\n]", "\u00a0{}", `{"a":"b"}x`, `[[[[[]]]]]`, `[[[[[]]]]`,
}

func TestValidAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range cases {
		if got, want := Valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("Valid(%q) = %v, encoding/json says %v", c, got, want)
		}
	}
}

// Nesting is bounded as encoding/json bounds it: 10000 levels are valid,
// 10001 are not, and neither exhausts the stack.
func TestValidBoundsNestingLikeEncodingJSON(t *testing.T) {
	for _, depth := range []int{10000, 10001} {
		for _, open := range []string{"[", `{"a":`} {
			closer := map[string]string{"[": "]", `{"a":`: "}"}[open]
			doc := []byte(strings.Repeat(open, depth) + "1" + strings.Repeat(closer, depth))
			if got, want := Valid(doc), json.Valid(doc); got != want {
				t.Errorf("%d levels of %s: Valid = %v, encoding/json says %v", depth, open, got, want)
			}
		}
	}
}

// Every webhook payload GitHub documents is valid, and so is every prefix
// of one cut short (what a dropped connection leaves) judged the same as
// encoding/json judges it.
func TestValidOnGitHubPayloads(t *testing.T) {
	for _, p := range githubtest.Payloads(t) {
		f, b := p.Event+"/"+p.Name, p.Body
		if !Valid(b) {
			t.Errorf("%s: refused", f)
		}
		for _, n := range []int{1, len(b) / 3, len(b) / 2, len(b) - 1} {
			if got, want := Valid(b[:n]), json.Valid(b[:n]); got != want {
				t.Errorf("%s cut at %d: Valid = %v, encoding/json says %v", f, n, got, want)
			}
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, c := range cases {
		f.Add([]byte(c))
	}
	keys := []string{"action", "a", ""}
	f.Fuzz(func(t *testing.T, data []byte) {
		want := json.Valid(data)
		if got := Valid(data); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", data, got, want)
		}
		values := make([][]byte, len(keys))
		if got := ValidFields(data, keys, values); got != want {
			t.Fatalf("ValidFields(%q) = %v, encoding/json says %v", data, got, want)
		}
		for i, v := range values {
			if want && v != nil && !json.Valid(v) {
				t.Fatalf("ValidFields(%q) took %q for %q: not a JSON value", data, v, keys[i])
			}
		}
	})
}

func TestValidFieldsFindsTopLevelValues(t *testing.T) {
	keys := []string{"action", "installation", "repository", "absent"}
	cases := []struct {
		name, doc string
		valid     bool
		want      []string // "" for nil
	}{
		{"every kind of value", `{"installation":{"id":7,"action":"nested"} , "action" : "opened","repository":{"full_name":"a/b"},"n":[1,{"action":"x"}]}`,
			true, []string{`"opened"`, `{"id":7,"action":"nested"}`, `{"full_name":"a/b"}`, ""}},
		{"a nested key of the same name is not taken", `{"x":{"action":"inner"}}`, true, []string{"", "", "", ""}},
		{"the first of a repeated key", `{"action":"first","action":"second"}`, true, []string{`"first"`, "", "", ""}},
		{"numbers, literals and arrays", `{"action":null,"installation":12.5e1,"repository":[1,2]}`, true, []string{"null", "12.5e1", "[1,2]", ""}},
		{"an escaped key is not matched", `{"act\u0069on":"opened"}`, true, []string{"", "", "", ""}},
		{"not an object", `["action","opened"]`, true, []string{"", "", "", ""}},
		{"invalid after a captured key", `{"action":"opened",}`, false, nil},
	}
	for _, c := range cases {
		values := make([][]byte, len(keys))
		if got := ValidFields([]byte(c.doc), keys, values); got != c.valid {
			t.Errorf("%s: ValidFields = %v, want %v", c.name, got, c.valid)
			continue
		}
		if got := Valid([]byte(c.doc)); got != c.valid {
			t.Errorf("%s: Valid = %v, ValidFields %v", c.name, got, c.valid)
		}
		for i, want := range c.want {
			if string(values[i]) != want {
				t.Errorf("%s: %s = %q, want %q", c.name, keys[i], values[i], want)
			}
		}
	}
}

// BenchmarkValidFields validates GitHub's example payloads as GitHub sends
// them (compact, not indented as ../shared stores them) and reads the
// intake's three top-level keys: what the intake does to every delivery.
func BenchmarkValidFields(b *testing.B) {
	var payloads [][]byte
	var size int64
	for _, p := range githubtest.Payloads(b) {
		var buf bytes.Buffer
		if err := json.Compact(&buf, p.Body); err != nil {
			b.Fatalf("%s/%s: %v", p.Event, p.Name, err)
		}
		payloads = append(payloads, buf.Bytes())
		size += int64(buf.Len())
	}
	keys := []string{"action", "installation", "repository"}
	values := make([][]byte, len(keys))
	b.SetBytes(size)
	for b.Loop() {
		for _, p := range payloads {
			if !ValidFields(p, keys, values) {
				b.Fatal("payload refused")
			}
		}
	}
}
