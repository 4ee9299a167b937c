package app

import (
	"encoding/json"
	"testing"
)

// parseMeta is the intake's only JSON check before a payload is stored:
// whatever it lets through must be JSON that encoding/json, which the
// handlers decode with later, accepts too.
func TestParseMetaRefusesWhatIsNotJSON(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, payload string }{
		{"truncated object", `{"action":"opened","repository":{"full_name":"acme/x"}`},
		{"trailing garbage", `{"action":"opened"} x`},
		{"two objects", `{"action":"opened"}{"action":"closed"}`},
		{"raw control character in a string", "{\"action\":\"op\x01ened\"}"},
		{"invalid escape", `{"action":"op\qened"}`},
		{"single quotes", `{'action':'opened'}`},
		{"NaN", `{"n":NaN}`},
		{"trailing comma", `{"action":"opened",}`},
		{"leading zero", `{"n":01}`},
		{"unclosed array", `{"a":[1,2}`},
		{"bare word", `opened`},
		{"empty", ``},
		{"invalid UTF-16 escape digits", `{"a":"\u12G4"}`},
	}
	for _, c := range cases {
		if json.Valid([]byte(c.payload)) {
			t.Fatalf("%s: the case itself is valid JSON", c.name)
		}
		if _, err := parseMeta([]byte(c.payload)); err == nil {
			t.Errorf("%s: parseMeta accepted %q", c.name, c.payload)
		}
	}
}

func TestParseMetaReadsTheColumns(t *testing.T) {
	t.Parallel()
	payload := `{"action":"completed","installation":{"id":42,"node_id":"x"},"repository":{"id":1,"full_name":"acme/checkout"},` +
		`"note":"caf\u00e9 \ud83d\ude80 \"quoted\"","n":-1.5e3,"ok":true,"none":null,"list":[]}`
	m, err := parseMeta([]byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	if m.Action != "completed" || m.InstallationID != 42 || m.Repository != "acme/checkout" {
		t.Errorf("parseMeta = %+v", m)
	}
}

// The columns come from the top-level keys only, wherever they stand and
// whatever else the payload holds.
func TestParseMetaTakesTopLevelKeysOnly(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, payload string
		want          payloadMeta
	}{
		{"keys after nested ones of the same name",
			`{"pull_request":{"action":"x","repository":{"full_name":"other/repo"},"installation":{"id":9}},"action":"closed","installation":{"id":3},"repository":{"full_name":"acme/app"}}`,
			payloadMeta{Action: "closed", InstallationID: 3, Repository: "acme/app"}},
		{"no action (push)", `{"ref":"refs/heads/main","repository":{"full_name":"acme/app"},"installation":{"id":3}}`,
			payloadMeta{InstallationID: 3, Repository: "acme/app"}},
		{"no installation, no repository", `{"action":"created","zen":"Keep it logically awesome."}`,
			payloadMeta{Action: "created"}},
		{"an escaped action value", `{"action":"re\"quested"}`, payloadMeta{Action: `re"quested`}},
		{"not an object", `[{"action":"opened"}]`, payloadMeta{}},
	}
	for _, c := range cases {
		got, err := parseMeta([]byte(c.payload))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s: parseMeta = %+v, want %+v", c.name, got, c.want)
		}
	}
}

// The 202's body is what json.Marshal writes for the ack, byte for byte,
// whatever the delivery id: GitHub's GUIDs and ids that need escaping.
func TestAckIsWhatEncodingJSONWrites(t *testing.T) {
	t.Parallel()
	ids := []string{"0b989ba4-242f-11e5-81e1-c7b6966d2516", "", "plain id 7", `quo"te`, `back\slash`,
		"<script>", "a&b", "tab\there", "nul\x00", "caf\xc3\xa9", "bad \xff utf-8", "line\u2028sep", "~\x7f"}
	for _, id := range ids {
		for _, status := range []string{"queued", "ignored", "duplicate"} {
			want, err := json.Marshal(ack{Delivery: id, Status: status})
			if err != nil {
				t.Fatal(err)
			}
			if got := ackJSON(id, status); string(got) != string(want)+"\n" {
				t.Errorf("ack of %q, %s: %q, encoding/json writes %q", id, status, got, want)
			}
		}
	}
}
