// Package webui is the room people look at: the releases page at / (per app
// and environment, newest first, with state, image, who, when, rollback
// eligibility and how to roll back), a release's page at /releases/{id} (its
// timeline from the audit events and its rollout in waves, read from
// app/rolloutflow by RolloutFlow: status, stages coloured by state, gate
// readings) and "sign in with GitHub" through the App's OAuth client.
//
// Where an environment has an eligible rollback target, the pages carry a
// Roll back form (POST /releases/{id}/rollback, no JavaScript): it rolls
// back as the signed-in person through rollbackflow.Starter — the same
// permission check and decision as /ripcord rollback and the check run's
// button — and the answer (queued, open already with its pull request, or
// the refusal's reason) comes back as a one-time message on the release's
// page. The form carries a token bound to the session and the release
// (csrf.go), so another site cannot post it for someone. Signing out is a
// form too (POST /logout with a token of the session; GET /logout only
// shows its button), so another site cannot sign someone out.
//
// Pages are rendered on the server with html/template from embedded
// templates and CSS: no build step, no JavaScript needed to read them. A
// visitor sees releases only after signing in, and only those of
// repositories they can read through the App's installations — GitHub, not
// ripcord, decides who may see what.
//
// The page models (view.go, timeline.go) are pure functions of records,
// audit events, the readable repositories and the time; the handlers only
// fetch and render.
package webui
