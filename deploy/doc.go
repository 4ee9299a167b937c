// Package deploy is the room for how ripcord is shipped: the container image
// (the repository's Dockerfile) and the Helm chart in deploy/helm/ripcord.
// It holds no code, only tests: they build the static binary the image gets
// and run it the way the image does, and they render the chart with helm,
// check what it promises (security context, probes, agent RBAC) and send
// every object to a real kube-apiserver with a server-side dry run.
package deploy
