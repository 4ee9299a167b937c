package app

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/palantir/go-githubapp/githubapp"

	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/app/setup"
	"github.com/ripcord/ripcord/internal/version"
)

// liveApp is the App the server acts as right now. It is swapped as one
// pointer, so the GitHub clients, the webhook secret and the identity pages
// read always belong to the same App.
type liveApp struct {
	creator githubapp.ClientCreator
	// stored is the App registered through /setup; nil when none is in use.
	stored *setup.Credentials
	// fromConfig: github.app_id and github.private_key are set; they win
	// over a stored App.
	fromConfig bool
}

// connectGitHub chooses the App: the configuration's when it names one,
// else the one stored by /setup, else none (every GitHub call then fails
// with an error naming the settings, and /setup offers to register one).
func (s *Server) connectGitHub(ctx context.Context, opts Options) error {
	s.ghClock = opts.GitHubClock
	s.github = ghclient.Live(func() githubapp.ClientCreator { return s.live.Load().creator })
	keys, err := setup.NewKeyring(s.cfg.SecretsKey, setup.KeyFile(s.cfg.Database))
	if err != nil {
		return err
	}
	s.apps = setup.NewStore(s.db, keys)
	g := s.cfg.GitHub
	if g.AppConfigured() {
		cc, err := s.newCreator(g.AppID, g.PrivateKey)
		if err != nil {
			return fmt.Errorf("github: %w", err)
		}
		live := &liveApp{creator: cc, fromConfig: true}
		stored, ok, err := s.apps.Load(ctx)
		switch {
		case err != nil:
			s.log.Warn("a stored App cannot be read; the configured one is used", "err", err)
		case ok && stored.AppID == g.AppID:
			live.stored = &stored // same App: its page, OAuth client and webhook secret are known too
		case ok:
			s.log.Warn("App credentials are both configured and stored by /setup; the configuration wins",
				"app_id", g.AppID, "stored_app_id", stored.AppID)
		}
		s.live.Store(live)
		s.log.Info("using the GitHub App from the configuration", "app_id", g.AppID)
		return nil
	}
	s.live.Store(&liveApp{creator: ghclient.NotConfigured})
	stored, ok, err := s.apps.Load(ctx)
	if err != nil {
		return fmt.Errorf("github: %w; set secrets_key to the key it was stored with, or configure github.app_id and github.private_key", err)
	}
	if !ok {
		return nil
	}
	if stored.APIURL != g.APIURL {
		s.log.Warn("the stored App was registered on another GitHub than github.api_url", "registered_on", stored.APIURL, "api_url", g.APIURL)
	}
	if err := s.activate(ctx, stored); err != nil {
		return fmt.Errorf("github: the App stored by /setup: %w", err)
	}
	s.log.Info("using the GitHub App registered through /setup", "app_id", stored.AppID, "slug", stored.Slug)
	return nil
}

// setupToken is the set-up token of a server that starts with no App,
// recorded so that every replica's /setup takes it; "" when an App is in
// use, since /setup then registers nothing.
func (s *Server) setupToken(ctx context.Context) (string, error) {
	if s.appIdentity().Configured {
		return "", nil
	}
	token, err := setup.NewToken()
	if err != nil {
		return "", err
	}
	if err := s.apps.AddToken(ctx, token, time.Now().UTC()); err != nil {
		return "", err
	}
	return token, nil
}

// activate makes c the App the server acts as, without a restart.
func (s *Server) activate(_ context.Context, c setup.Credentials) error {
	cc, err := s.newCreator(c.AppID, c.PrivateKey)
	if err != nil {
		return err
	}
	s.live.Store(&liveApp{creator: cc, stored: &c})
	return nil
}

func (s *Server) newCreator(appID int64, key []byte) (githubapp.ClientCreator, error) {
	return ghclient.New(ghclient.Config{
		AppID: appID, PrivateKey: key, APIURL: s.cfg.GitHub.APIURL,
		Version: version.Version, Registerer: s.metrics.registry, Counter: s.ghCalls, Clock: s.ghClock,
	})
}

// webhookSecrets are the configured secrets and the stored App's.
func (s *Server) webhookSecrets() []string {
	secrets := s.cfg.GitHub.WebhookSecrets
	if st := s.live.Load().stored; st != nil && st.WebhookSecret != "" && !slices.Contains(secrets, st.WebhookSecret) {
		secrets = append(slices.Clip(secrets), st.WebhookSecret)
	}
	return secrets
}

// appIdentity is the App as the server knows it now.
func (s *Server) appIdentity() pipeline.AppIdentity {
	g := s.cfg.GitHub
	live := s.live.Load()
	id := pipeline.AppIdentity{WebURL: WebURL(g.APIURL)}
	if live.fromConfig {
		id.Configured, id.ID = true, g.AppID
	}
	if st := live.stored; st != nil {
		id.Configured, id.ID = true, st.AppID
		id.Slug, id.HTMLURL, id.ClientID, id.ClientSecret = st.Slug, st.HTMLURL, st.ClientID, st.ClientSecret
	}
	return id
}

// handledEvents are the events some handler of this server handles.
func (s *Server) handledEvents() []string {
	events := make([]string, 0, len(s.handlers))
	for e := range s.handlers {
		events = append(events, e)
	}
	slices.Sort(events)
	return events
}

// acts reports whether some handler of this server acts on a delivery of
// event with action; one that none does is stored ignored, with no job.
func (s *Server) acts(event, action string) bool {
	for _, h := range s.handlers[event] {
		if ah, ok := h.(pipeline.ActionHandler); !ok || ah.HandlesAction(event, action) {
			return true
		}
	}
	return false
}
