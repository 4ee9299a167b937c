package app

import (
	"github.com/ripcord/ripcord/app/pipeline"
)

// capabilities registers each capability's workers and routes and returns its
// webhook handlers. One line per capability package.
func capabilities(d pipeline.Deps) []EventHandler {
	var hs []EventHandler
	// Capabilities add themselves here, e.g.:
	// hs = append(hs, recoveryflow.Register(d)...)
	_ = d
	return hs
}
