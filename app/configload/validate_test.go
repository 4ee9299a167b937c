package configload

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/repoconfig"
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

// The API checks a wave's parallel against this server's max_parallel.
func TestValidateEndpointUsesTheServersMaxParallel(t *testing.T) {
	doc := `version: 1
apps:
  shop:
    environments:
      prod:
        cluster: c
        targets: [{host: a, labels: {region: eu-1}}, {host: b, labels: {region: eu-1}}]
        rollout:
          waves: [{name: all, select: "region=eu-1", parallel: 8}]
`
	for _, tt := range []struct {
		max   int
		valid bool
	}{{0, true}, {16, true}, {4, false}} {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/validate", strings.NewReader(doc))
		w := httptest.NewRecorder()
		validateFor(repoconfig.Options{MaxParallel: tt.max})(w, req)
		var got ValidateResponse
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if got.Valid != tt.valid {
			t.Errorf("max_parallel %d: valid = %v (%v), want %v", tt.max, got.Valid, got.Problems, tt.valid)
		}
		if !tt.valid && (len(got.Problems) != 1 || !strings.Contains(got.Problems[0].Message, "max_parallel 4")) {
			t.Errorf("max_parallel %d: problems %v, want the parallel one", tt.max, got.Problems)
		}
	}
}

// Only a body over the limit is answered 413: one the server could not
// read to its end (a broken chunked encoding, or a client that stopped
// before its Content-Length) is a 400 that says so, not a claim that a
// small config is larger than 1 MiB.
func TestValidateAnUnreadableBodyIsNotTooLarge(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(validateHandler))
	t.Cleanup(srv.Close)
	cases := []struct{ name, request string }{
		{"a broken chunked body", "POST /api/v1/validate HTTP/1.1\r\nHost: ripcord\r\nContent-Type: text/plain\r\n" +
			"Transfer-Encoding: chunked\r\n\r\n7\r\nversion\r\nzz\r\n"},
		{"a body cut short", "POST /api/v1/validate HTTP/1.1\r\nHost: ripcord\r\nContent-Type: text/plain\r\n" +
			"Content-Length: 100\r\n\r\nversion: 1\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, c.request); err != nil {
				t.Fatal(err)
			}
			// The client sends nothing more: the server reads the end of
			// the body where it expected more of it.
			if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e pipeline.APIError
			_ = json.NewDecoder(resp.Body).Decode(&e)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(e.Error, "could not read the request body") {
				t.Errorf("answer %d %q, want 400 saying the body could not be read", resp.StatusCode, e.Error)
			}
		})
	}
}

// A JSON body the validator cannot read says what was sent and what to
// send instead: the JSON form, or the YAML itself with another type.
func TestValidateJSONRefusalsSayWhatToSend(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"content not a string", `{"content": 1}`, "content: expected a string holding the YAML file, got JSON number"},
		{"an unknown field", `{"contents": "version: 1"}`, `contents: unknown field; send {"content": "<the YAML file>"}`},
		{"an empty body", ``, `the body is empty: expected {"content": "<the YAML file>"}; or send the YAML itself with another Content-Type`},
		{"YAML sent as JSON", "version: 1\n", "; or send the YAML itself with another Content-Type"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/api/v1/validate", strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			validateHandler(w, req)
			var e pipeline.APIError
			_ = json.Unmarshal(w.Body.Bytes(), &e)
			if w.Code != http.StatusBadRequest || !strings.HasSuffix(e.Error, c.want) {
				t.Errorf("%d %q, want 400 ending %q", w.Code, e.Error, c.want)
			}
		})
	}
}
