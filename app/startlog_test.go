package app

import (
	"log/slog"
	"net/http"
	"testing"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// The start-up warning of a server with no App says what happens to
// webhooks as the intake does it: stored when a webhook secret is set,
// refused with 401 when none is (as with `make run` on a fresh machine),
// and never "stored" for deliveries that GitHub will show as refused.
func TestTheStartLogSaysWhetherWebhooksAreStoredBeforeTheAppIsConfigured(t *testing.T) {
	t.Parallel()
	body := []byte(`{"action":"completed","check_suite":{"id":1}}`)
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		cases := []struct {
			name     string
			secrets  []string
			code     int
			says     string
			saysNot  string
			signWith string
		}{
			{"no webhook secret", nil, http.StatusUnauthorized,
				"every delivery is refused with 401", "webhooks are stored", "anything"},
			{"a webhook secret", []string{testSecret}, http.StatusAccepted,
				"webhooks are stored", "refused", testSecret},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				logs := &syncBuffer{}
				ts := startServerWith(t, dbURL, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))}, func(cfg *config.Config) {
					cfg.GitHub.WebhookSecrets = c.secrets
				})
				code, answer := ts.deliver(t, "check_suite", "start-log-"+c.name, body, githubtest.Sign(c.signWith, body))
				if code != c.code {
					t.Fatalf("delivery answered %d %s, want %d", code, answer, c.code)
				}
				got := logs.String()
				if !contains(got, "the GitHub App is not configured") || !contains(got, c.says) || contains(got, c.saysNot) {
					t.Errorf("the start log should say %q and not %q:\n%s", c.says, c.saysNot, got)
				}
			})
		}
	})
}
