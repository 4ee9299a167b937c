// Package actions holds the code of ripcord's companion GitHub Actions and
// its tests. The actions themselves are not Go: the root action.yml is a
// composite action that runs fact/post-fact.sh (bash and curl), so using it
// builds nothing; with mode: probe it runs fact/probe.sh, which sends a
// rollout's probes from the runner and posts the results. The Go tests run that script against a loopback server
// playing both GitHub's OIDC token endpoint and ripcord.
package actions
