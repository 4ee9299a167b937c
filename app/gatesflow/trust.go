package gatesflow

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/gates/attest"
	"github.com/ripcord/ripcord/repoconfig"
)

// errNoTrust stands for sbom or image-scan configured without
// gates.provenance, whose keys and identities they verify with.
var errNoTrust = errors.New("gates.provenance is not configured: sbom and image-scan verify attestations with its keys or identities")

// readTrust reads gates.provenance's trust material from the default
// branch, like the config and the values schema: a PR must not be able to
// bring the key that judges it. A key that holds "-----BEGIN" is inline PEM.
func readTrust(ctx context.Context, gh *github.Client, repository string, p *repoconfig.Provenance) attest.Trust {
	if p == nil {
		return attest.Trust{Err: errNoTrust}
	}
	var pol attest.Policy
	for i, k := range p.Keys {
		if strings.Contains(k, "-----BEGIN") {
			pol.Keys = append(pol.Keys, attest.Key{Source: fmt.Sprintf("inline key %d", i+1), PEM: []byte(k)})
			continue
		}
		b, err := defaultBranchFile(ctx, gh, repository, k, "gates.provenance.keys")
		if err != nil {
			return attest.Trust{Err: err}
		}
		pol.Keys = append(pol.Keys, attest.Key{Source: k, PEM: b})
	}
	for _, id := range p.Identities {
		pol.Identities = append(pol.Identities, attest.Identity{Issuer: id.Issuer, SubjectRegexp: id.SubjectRegexp})
	}
	if p.TrustedRoot != "" {
		b, err := defaultBranchFile(ctx, gh, repository, p.TrustedRoot, "gates.provenance.trusted_root")
		if err != nil {
			return attest.Trust{Err: err}
		}
		pol.TrustedRoot = b
	}
	return attest.Trust{Policy: pol}
}

func defaultBranchFile(ctx context.Context, gh *github.Client, repository, path, field string) ([]byte, error) {
	b, err := ghclient.FileAt(ctx, gh, repository, path, "")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	if b == nil {
		return nil, fmt.Errorf("%s: %s is not on the default branch", field, path)
	}
	return b, nil
}
