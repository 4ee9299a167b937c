package attest

import (
	"testing"

	"github.com/ripcord/ripcord/gates/attest/attesttest"
)

const (
	builder = attesttest.Builder
	source  = attesttest.Source
	spdxDoc = attesttest.SPDXDoc
)

var (
	startRegistry = attesttest.StartRegistry
	pushImage     = attesttest.PushImage
	signedEntity  = attesttest.Signed
	provenanceV02 = attesttest.ProvenanceV02
	provenanceV1  = attesttest.ProvenanceV1
	trivyScan     = attesttest.TrivyScan
)

type signer struct{ attesttest.Signer }

func newSigner(t testing.TB) signer { return signer{attesttest.NewSigner(t)} }

func (s signer) policy() Policy {
	return Policy{Keys: []Key{{Source: ".github/cosign.pub", PEM: s.PEM}}}
}
