package cdevents

import (
	"strings"

	"github.com/ripcord/ripcord/records"
)

// ArtifactID is the purl CDEvents carries as subject.content.artifactId for
// what a record deployed, following the purl spec's oci type:
//
//	pkg:oci/<name>@sha256%3A<hex>?repository_url=<registry>/<path>&tag=<tag>
//
// The name is the repository's last path segment, lowercased; the version is
// the resolved digest, percent-encoded; repository_url is the repository
// without tag or digest. Docker Hub's short forms are spelled out
// ("nginx" → docker.io/library/nginx) so one image always has one purl,
// however the release file spelled it.
//
// Two shapes are not image references: a bare digest ("sha256:…") has no
// repository, so the app stands in for the name; and a single word with no
// registry, tag or digest is the bare version a workflow deploy records, so
// it becomes pkg:generic/<app>@<version>, with the digest (if any) as a
// checksum qualifier.
func ArtifactID(r records.Record) string {
	digest := r.ResolvedDigest()
	ref := records.ParseImage(r.Image)
	image := strings.TrimSpace(r.Image)
	bareVersion := ref.Tag == "" && ref.Digest == "" && !strings.Contains(ref.Repository, "/")
	if bareVersion && ref.Repository != "" {
		var q []qualifier
		if digest != "" {
			q = append(q, qualifier{"checksum", digest})
		}
		return purl("generic", r.App, image, q)
	}
	if ref.Repository == "" {
		return purl("oci", r.App, digest, nil)
	}
	repo := dockerHub(strings.ToLower(ref.Repository))
	q := []qualifier{{"repository_url", repo}}
	if ref.Tag != "" {
		q = append(q, qualifier{"tag", ref.Tag})
	}
	return purl("oci", repo[strings.LastIndex(repo, "/")+1:], digest, q)
}

// dockerHub spells out Docker Hub's implicit registry and library
// namespace, as the docker CLI resolves them: the first path segment is a
// registry only when it has a dot or a port, or is localhost.
func dockerHub(repo string) string {
	first, rest, nested := strings.Cut(repo, "/")
	if nested && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return repo
	}
	if !nested {
		return "docker.io/library/" + first
	}
	return "docker.io/" + first + "/" + rest
}

type qualifier struct{ key, value string }

// purl renders a package URL. Qualifiers must come sorted by key, as the
// spec's canonical form requires.
func purl(typ, name, version string, qualifiers []qualifier) string {
	var b strings.Builder
	b.WriteString("pkg:" + typ + "/" + escape(strings.ToLower(name), ""))
	if version != "" {
		b.WriteString("@" + escape(version, ""))
	}
	for i, q := range qualifiers {
		if i == 0 {
			b.WriteByte('?')
		} else {
			b.WriteByte('&')
		}
		// A qualifier value may keep '/' and ':' (a registry path and
		// port), as the spec's own oci examples do.
		b.WriteString(q.key + "=" + escape(q.value, "/:"))
	}
	return b.String()
}

// escape percent-encodes every byte that is not an RFC 3986 unreserved
// character or one of keep. Notably ':' in a digest becomes %3A.
func escape(s, keep string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) || strings.IndexByte(keep, c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}
