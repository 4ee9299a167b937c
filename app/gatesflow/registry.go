package gatesflow

import (
	"context"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/gates/attest"
	"github.com/ripcord/ripcord/internal/outbound"
)

// newRegistry is the one verifier of the server: its cache outlives a job,
// so a re-run, or another PR pinning the same digest, reads nothing again.
func newRegistry(c *config.Config) attest.Source {
	var r config.Registries
	if c != nil {
		r = c.Registries
	}
	kc, err := attest.LoadDockerConfig(r.Auth)
	if err != nil {
		return brokenRegistry{err}
	}
	return attest.NewVerifier(attest.Registries{Insecure: r.Insecure, Keychain: kc,
		Transport: outbound.RegistryTransport()}, attest.DefaultCacheSize)
}

// brokenRegistry answers every verification with the settings' error, so
// the registry gates fail closed and say why.
type brokenRegistry struct{ err error }

func (b brokenRegistry) Verify(context.Context, string, attest.Policy) (attest.Report, error) {
	return attest.Report{}, b.err
}
