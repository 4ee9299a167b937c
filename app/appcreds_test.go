package app

import (
	"slices"
	"testing"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/setup"
)

func TestTheAppInUseIsOneIdentity(t *testing.T) {
	t.Parallel()
	stored := &setup.Credentials{AppID: 7, Slug: "ripcord-acme", HTMLURL: "https://github.com/apps/ripcord-acme",
		ClientID: "Iv1.x", ClientSecret: "cs", WebhookSecret: "stored-secret"}
	cases := []struct {
		name        string
		cfg         config.GitHub
		live        liveApp
		wantID      int64
		wantSlug    string
		wantSecrets []string
	}{
		{"nothing configured or stored", config.GitHub{}, liveApp{}, 0, "", nil},
		{"registered through /setup: its page, OAuth client and webhook secret are known",
			config.GitHub{}, liveApp{stored: stored}, 7, "ripcord-acme", []string{"stored-secret"}},
		{"configured by settings only", config.GitHub{AppID: 9, WebhookSecrets: []string{"cfg"}},
			liveApp{fromConfig: true}, 9, "", []string{"cfg"}},
		{"configured and stored, the same App: both secrets work",
			config.GitHub{AppID: 7, WebhookSecrets: []string{"cfg"}}, liveApp{fromConfig: true, stored: stored},
			7, "ripcord-acme", []string{"cfg", "stored-secret"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.APIURL = "https://ghe.example.com/api/v3/"
			s := &Server{cfg: &config.Config{GitHub: c.cfg}}
			c.live.creator = ghclient.NotConfigured
			s.live.Store(&c.live)
			id := s.appIdentity()
			if id.ID != c.wantID || id.Configured != (c.wantID != 0) || id.Slug != c.wantSlug || id.WebURL != "https://ghe.example.com/" {
				t.Errorf("appIdentity = %+v, want id %d, slug %q", id, c.wantID, c.wantSlug)
			}
			if c.wantSlug != "" && (id.ClientID != "Iv1.x" || id.ClientSecret != "cs" || id.HTMLURL != stored.HTMLURL) {
				t.Errorf("appIdentity = %+v, want the stored App's OAuth client and page", id)
			}
			if got := s.webhookSecrets(); !slices.Equal(got, c.wantSecrets) {
				t.Errorf("webhookSecrets = %v, want %v", got, c.wantSecrets)
			}
		})
	}
}
