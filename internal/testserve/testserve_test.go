package testserve

import (
	"net/http"
	"testing"

	"github.com/ripcord/ripcord/app/config"
)

// The server Start returns is the one configure set up, at the URL
// configure was told, and it is gone once the test that started it ends.
func TestStartServesWhatConfigureSetUntilTheTestEnds(t *testing.T) {
	var url, told string
	t.Run("serve", func(t *testing.T) {
		url = Start(t, func(cfg *config.Config, u string) {
			told = u
			cfg.APIToken = "testserve-token"
		})
		if told != url {
			t.Fatalf("configure was told %q, Start returned %q", told, url)
		}
		for token, want := range map[string]int{"testserve-token": http.StatusOK, "another": http.StatusUnauthorized} {
			req, err := http.NewRequest(http.MethodGet, url+"/api/v1/releases", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("GET /api/v1/releases with token %q: %d, want %d", token, resp.StatusCode, want)
			}
		}
	})
	if url == "" {
		t.FailNow()
	}
	if resp, err := http.Get(url + "/healthz"); err == nil {
		resp.Body.Close()
		t.Errorf("the server still answers (%d) after its test ended", resp.StatusCode)
	}
}
