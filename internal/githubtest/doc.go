// Package githubtest is the room where ripcord's end-to-end tests meet GitHub's own
// descriptions of itself: GitHub's OpenAPI description of the REST API and the webhook
// payloads Octokit publishes, both read from ../shared/github.
//
// It offers three things:
//
//   - webhook deliveries signed and labelled as GitHub sends them (Sign, Payloads,
//     NewDelivery, BuildDeploymentProtectionRule);
//   - a check of any HTTP request against GitHub's OpenAPI description (LoadSpec,
//     (*Spec).Validate), with a router that understands GitHub's multi-segment
//     parameters such as contents/{path} and git/ref/{ref};
//   - Server, a stateful fake of api.github.com on loopback that rejects (and fails the
//     test on) every request GitHub's description does not allow, records every request,
//     and keeps enough state — files, git objects, refs, pull requests, issues, check
//     runs, workflow runs, deployments — for ripcord's code to run against it end to end.
//
// Tests that need ../shared/github skip, saying why, when it is absent.
package githubtest
