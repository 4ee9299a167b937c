package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/oidcauth"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/repoconfig"
)

// oidcRuleReadTimeout bounds reading .github/ripcord.yml while a workflow
// waits for its post: the bundled action gives each attempt 10 s.
const oidcRuleReadTimeout = 5 * time.Second

// oidcTarget is an app's environment a workflow's request posts for; at
// names the request's part that posts for it in a refusal ("facts[2]").
type oidcTarget struct {
	app, environment, at string
}

// requireOIDCRule refuses a workflow's request for an environment whose
// oidc rule (repoconfig.OIDCRule) its token's claims do not satisfy: 403
// naming the rule's key and the claim, before anything is stored.
//
// The rule is read as every capability reads the file: from the default
// branch of the token's repository (or its organisation's .github),
// revalidated by ETag. Without a file there is no rule and every workflow
// of the repository may post, as before rules existed; so may they on a
// server with no GitHub App, which reads no repository's file at all. A
// file that cannot be read now (503) or does not load (422) may hold a
// rule, and whoever wrote one counts on it: a workflow's token is refused
// until it can be checked. The api_token never comes here.
func (s *Server) requireOIDCRule(w http.ResponseWriter, r *http.Request, claims *oidcauth.Claims, targets []oidcTarget) bool {
	repo := claims.Repository
	cfg, ok := s.oidcRuleConfig(w, r, repo)
	if !ok || cfg == nil {
		return ok
	}
	for _, t := range targets {
		refusal := cfg.AdmitOIDC(t.app, t.environment, claims.Ref, claims.Environment)
		if refusal == nil {
			continue
		}
		at := ""
		if t.at != "" {
			at = t.at + ": "
		}
		writeError(w, http.StatusForbidden, refusal.Key, fmt.Sprintf(
			"%s%s: %s restricts which workflows may post for %s in %s; post from a workflow it allows (nothing was stored)",
			at, refusal.Error(), repoconfig.Path, t.app, t.environment))
		return false
	}
	return true
}

// admitWorkflow is requireOIDCRule for one environment, as the
// capabilities' own OIDC endpoints ask it (pipeline.Deps.AdmitWorkflow):
// POST /api/v1/rollouts/{id}/probes, whose readings move a rollout's
// waves on or stop them, for the rollout's app and environment. Like
// POST /api/v1/facts it first requires the App on the token's repository:
// a workflow of a repository the App was uninstalled from is told to
// install it (403), not to retry a rule that no read can check now.
func (s *Server) admitWorkflow(w http.ResponseWriter, r *http.Request, claims *oidcauth.Claims, app, environment string) bool {
	if !s.requireInstalled(w, r, claims.Repository) {
		return false
	}
	return s.requireOIDCRule(w, r, claims, []oidcTarget{{app: app, environment: environment}})
}

// oidcRuleConfig is repo's config for requireOIDCRule: nil with ok when no
// rule can be in force (no file, no App), nil and !ok when the request was
// answered (refused, or an error).
func (s *Server) oidcRuleConfig(w http.ResponseWriter, r *http.Request, repo string) (*repoconfig.Config, bool) {
	inst, err := pipeline.InstallationOf(r.Context(), s.db.Read, repo)
	if err != nil {
		s.internalError(w, r, err)
		return nil, false
	}
	res, err := s.loadRuleConfig(r.Context(), inst, repo)
	if err == nil {
		return s.usableRuleConfig(w, repo, res)
	}
	if pipeline.AppNotConfigured(err) {
		return nil, true
	}
	s.log.Warn("a workflow's post is refused: its repository's config cannot be read to check the environments' oidc rules",
		"repository", repo, "err", err)
	writeError(w, http.StatusServiceUnavailable, "", fmt.Sprintf(
		"cannot read %s of %s from GitHub to check which workflows may post for its environments (their oidc rules); nothing was stored: retry later",
		repoconfig.Path, repo))
	return nil, false
}

// loadRuleConfig reads repo's config through installation inst, within
// oidcRuleReadTimeout.
func (s *Server) loadRuleConfig(ctx context.Context, inst int64, repo string) (configload.Result, error) {
	if inst == 0 {
		// Uninstalled since requireInstalled looked: nothing can read the
		// file now, and a rule in it still holds.
		return configload.Result{}, fmt.Errorf("the App is no longer installed on %s", repo)
	}
	gh, err := s.github.NewInstallationClient(inst)
	if err != nil {
		return configload.Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, oidcRuleReadTimeout)
	defer cancel()
	return s.configs.Load(ctx, gh.Repositories, repo, "")
}

// usableRuleConfig is what a load says for the rule: no file, no rule; a
// file that does not load is refused on the key to fix, as
// POST /api/v1/rollouts refuses it.
func (s *Server) usableRuleConfig(w http.ResponseWriter, repo string, res configload.Result) (*repoconfig.Config, bool) {
	switch {
	case !res.Found:
		return nil, true
	case !res.Valid():
		writeError(w, http.StatusUnprocessableEntity, res.Field(), res.Explain(repo)+
			"; until it loads, workflows' tokens are refused, as an environment's oidc rule in it may restrict them (nothing was stored)")
		return nil, false
	}
	return res.Config, true
}

// factTargets are the environments task facts post for: each fact's own,
// and the environment of the stored release it names when that is
// another (such a fact is ignored, but leaves its mark in that release's
// timeline, which a refused workflow must not).
func (s *Server) factTargets(ctx context.Context, facts []records.Fact, batch bool) ([]oidcTarget, error) {
	var out []oidcTarget
	seen := map[[2]string]bool{}
	add := func(app, env string, i int) {
		if seen[[2]string{app, env}] {
			return
		}
		seen[[2]string{app, env}] = true
		at := ""
		if batch {
			at = fmt.Sprintf("facts[%d]", i)
		}
		out = append(out, oidcTarget{app: app, environment: env, at: at})
	}
	for i, f := range facts {
		add(f.App, f.Environment, i)
		if f.ReleaseKey() == "" {
			continue
		}
		rec, err := s.records.Get(ctx, f.ReleaseKey())
		if errors.Is(err, records.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		add(rec.App, rec.Environment, i)
	}
	return out, nil
}
