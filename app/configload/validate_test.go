package configload

import (
	"encoding/json"
	"github.com/ripcord/ripcord/app/pipeline"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestValidateEndpoint(t *testing.T) {
	invalid := "version: 1\napps:\n  checkout:\n    environmnets: {}\n"
	jsonBody := func(s string) string { b, _ := json.Marshal(map[string]string{"content": s}); return string(b) }
	cases := []struct {
		name, contentType, body string
		status                  int
		valid                   bool
		problemAt               string // "path@line:column" of the first problem
		field                   string // of a 400
	}{
		{"a valid YAML file", "application/yaml", valid, 200, true, "", ""},
		{"a typo is a problem at its line and column", "text/plain", invalid, 200, false, "apps.checkout.environmnets@4:5", ""},
		{"the JSON form", "application/json", jsonBody(invalid), 200, false, "apps.checkout.environmnets@4:5", ""},
		{"the JSON form sent without a JSON type", "application/x-www-form-urlencoded", jsonBody(valid), 200, true, "", ""},
		{"an empty file says what it needs", "", "", 200, false, "@1:1", ""},
		{"an unknown JSON field is named", "application/json", `{"contents": "version: 1"}`, 400, false, "", "contents"},
		{"content must be a string", "application/json", `{"content": 1}`, 400, false, "", "content"},
		{"content is required", "application/json", `{}`, 400, false, "", "content"},
		{"a body over 1 MiB is refused", "text/plain", strings.Repeat("#", maxConfigBytes+1), 413, false, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/api/v1/validate", strings.NewReader(c.body))
			if c.contentType != "" {
				req.Header.Set("Content-Type", c.contentType)
			}
			w := httptest.NewRecorder()
			validateHandler(w, req)
			if w.Code != c.status {
				t.Fatalf("status %d, want %d: %s", w.Code, c.status, w.Body)
			}
			if c.status == 400 {
				var e pipeline.APIError
				_ = json.Unmarshal(w.Body.Bytes(), &e)
				if e.Field != c.field {
					t.Errorf("field = %q, want %q (%s)", e.Field, c.field, e.Error)
				}
				return
			}
			if c.status != 200 {
				return
			}
			var got ValidateResponse
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if got.Valid != c.valid || got.Problems == nil {
				t.Fatalf("valid = %v with problems %v, want %v (problems always a list)", got.Valid, got.Problems, c.valid)
			}
			if c.problemAt != "" {
				p := got.Problems[0]
				if at := p.Path + "@" + itoa(p.Line) + ":" + itoa(p.Column); at != c.problemAt || p.Message == "" {
					t.Errorf("first problem %+v at %s, want %s", p, at, c.problemAt)
				}
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
