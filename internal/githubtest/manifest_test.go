package githubtest

import (
	"encoding/json"
	"net/http"
	"testing"
)

func convert(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	res, err := http.Post(url, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(res.Body).Decode(&body)
	return res.StatusCode, body
}

// A manifest code works once, on github.com's and GitHub Enterprise
// Server's paths alike; a spent one gets GitHub's 404.
func TestManifestCodeConvertsOnce(t *testing.T) {
	s := NewServer(t)
	status, app := convert(t, s.URL()+"app-manifests/code1/conversions")
	if status != http.StatusCreated {
		t.Fatalf("first conversion: HTTP %d", status)
	}
	for _, field := range []string{"id", "slug", "html_url", "client_id", "client_secret", "webhook_secret", "pem"} {
		if app[field] == nil || app[field] == "" {
			t.Errorf("conversion has no %s: %v", field, app)
		}
	}
	if app["webhook_secret"] != ManifestWebhookSecret {
		t.Errorf("webhook_secret = %v, want %q", app["webhook_secret"], ManifestWebhookSecret)
	}
	if status, _ := convert(t, s.URL()+"app-manifests/code1/conversions"); status != http.StatusNotFound {
		t.Errorf("second conversion of the same code: HTTP %d, want 404", status)
	}
	s.SpendManifestCode("code2")
	if status, _ := convert(t, s.URL()+"api/v3/app-manifests/code2/conversions"); status != http.StatusNotFound {
		t.Errorf("conversion of a spent code through /api/v3: HTTP %d, want 404", status)
	}
	if status, _ := convert(t, s.URL()+"api/v3/app-manifests/code3/conversions"); status != http.StatusCreated {
		t.Errorf("conversion of a fresh code through /api/v3: HTTP %d, want 201", status)
	}
	for _, r := range s.Requests() {
		if r.OperationID != "apps/create-from-manifest" || r.Invalid != "" {
			t.Errorf("request %s %s: operation %q, invalid %q", r.Method, r.Path, r.OperationID, r.Invalid)
		}
	}
}
