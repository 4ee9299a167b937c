// Package app is ripcord's HTTP server and its wiring: webhook intake through
// go-githubapp's dispatcher into a durable store, the job queue that does the
// work, the /api/v1 endpoints, and the operator endpoints. Domain decisions live
// in the domain packages; this package loads their inputs and stores their
// outputs.
package app
