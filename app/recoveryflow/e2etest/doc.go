// Package e2etest is test support for ripcord's capability packages: it runs
// the real `ripcord serve` (app.New and Run on a loopback listener) against
// githubtest's fake GitHub, which checks every request against GitHub's
// OpenAPI description, and an oidctest issuer for the bundled action's task
// facts; it builds webhook deliveries from GitHub's published payloads and
// signs them as GitHub does. Only tests import it.
package e2etest
