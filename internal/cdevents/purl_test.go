package cdevents

import (
	"testing"

	packageurl "github.com/package-url/packageurl-go"

	"github.com/ripcord/ripcord/records"
)

const (
	hexA   = "3b5a0d3e2b1c4f6a7e8d9c0b1a2f3e4d5c6b7a8f9e0d1c2b3a4f5e6d7c8b9a0f"
	digA   = "sha256:" + hexA
	escA   = "sha256%3A" + hexA
	hex512 = hexA + hexA
)

func TestArtifactID(t *testing.T) {
	cases := []struct {
		name          string
		image, digest string
		want          string
	}{
		{"tag is dropped from repository_url and kept as the tag qualifier",
			"ghcr.io/acme/checkout:v1.2.3", digA,
			"pkg:oci/checkout@" + escA + "?repository_url=ghcr.io/acme/checkout&tag=v1.2.3"},
		{"registry port is not mistaken for a tag",
			"registry.local:5000/team/api:2.0", digA,
			"pkg:oci/api@" + escA + "?repository_url=registry.local:5000/team/api&tag=2.0"},
		{"registry port with no tag at all",
			"localhost:5000/api", digA,
			"pkg:oci/api@" + escA + "?repository_url=localhost:5000/api"},
		{"nested path: name is the last segment only",
			"eu.gcr.io/proj/team/sub/api:1", digA,
			"pkg:oci/api@" + escA + "?repository_url=eu.gcr.io/proj/team/sub/api&tag=1"},
		{"digest pinned in the image and the digest field empty",
			"ghcr.io/acme/checkout@" + digA, "",
			"pkg:oci/checkout@" + escA + "?repository_url=ghcr.io/acme/checkout"},
		{"tag and pinned digest both present",
			"ghcr.io/acme/checkout:v1@" + digA, "",
			"pkg:oci/checkout@" + escA + "?repository_url=ghcr.io/acme/checkout&tag=v1"},
		{"digest-only image has no repository, so the app names it",
			digA, "",
			"pkg:oci/checkout@" + escA},
		{"docker hub short name is spelled out",
			"nginx:1.25", digA,
			"pkg:oci/nginx@" + escA + "?repository_url=docker.io/library/nginx&tag=1.25"},
		{"docker hub user repository gets the docker.io registry",
			"bitnami/redis:7", digA,
			"pkg:oci/redis@" + escA + "?repository_url=docker.io/bitnami/redis&tag=7"},
		{"registry in capitals is lowercased, the tag is not",
			"GHCR.io/Acme/Checkout:RC1", digA,
			"pkg:oci/checkout@" + escA + "?repository_url=ghcr.io/acme/checkout&tag=RC1"},
		{"a tag but no digest has no version",
			"ghcr.io/acme/checkout:v1", "",
			"pkg:oci/checkout?repository_url=ghcr.io/acme/checkout&tag=v1"},
		{"sha512 digest is encoded like sha256",
			"ghcr.io/acme/checkout", "sha512:" + hex512,
			"pkg:oci/checkout@sha512%3A" + hex512 + "?repository_url=ghcr.io/acme/checkout"},
		{"bare version from a workflow deploy is not an image",
			"v1a2b3c4-1760000000", "",
			"pkg:generic/checkout@v1a2b3c4-1760000000"},
		{"bare version with a resolved digest carries it as checksum",
			"1.4.0", digA,
			"pkg:generic/checkout@1.4.0?checksum=" + digA},
		{"odd characters in a bare version are percent-encoded",
			"build #7+x", "",
			"pkg:generic/checkout@build%20%237%2Bx"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := records.Record{App: "checkout", Image: tc.image, Digest: tc.digest}
			got := ArtifactID(r)
			if got != tc.want {
				t.Fatalf("ArtifactID(%q, %q)\n got %s\nwant %s", tc.image, tc.digest, got, tc.want)
			}
			// A purl parser must read back what we meant: the version
			// decodes to the digest (oci) or to the version as deployed.
			p, err := packageurl.FromString(got)
			if err != nil {
				t.Fatalf("purl %s does not parse: %v", got, err)
			}
			wantVersion := r.ResolvedDigest()
			if p.Type == "generic" {
				wantVersion = tc.image
			}
			if p.Version != wantVersion {
				t.Errorf("purl version reads back as %q, want %q", p.Version, wantVersion)
			}
		})
	}
}
