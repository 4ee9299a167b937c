package records

import "strings"

// RunsImage reports whether observed, the images a workload runs, contain
// the record's image: by digest when both have one, otherwise by reference
// (repository and tag, Docker Hub's short names expanded; a bare version,
// as workflow deploys record, is compared with the tag). It is false only
// when every observed image decidedly differs. Nothing decides, and so
// nothing contradicts the record, when either side says nothing to compare
// (a record with no image, a fact that reports no images), or when one side
// has only a digest and the other only a tag or version: a workload pinned
// by digest (GitOps writes those) cannot be told apart from the release a
// workflow recorded by its version, and a false drift would keep a
// healthy release from ever turning healthy.
func (r Record) RunsImage(observed []string) bool {
	want := ParseImage(r.Image)
	wantDigest := r.ResolvedDigest()
	if len(observed) == 0 || (strings.TrimSpace(r.Image) == "" && wantDigest == "") {
		return true
	}
	wantTagged := want.Tag != "" || bareVersion(want)
	undecided := false
	for _, img := range observed {
		got := ParseImage(img)
		if wantDigest != "" && got.Digest != "" {
			if got.Digest == wantDigest {
				return true
			}
			continue
		}
		if !wantTagged || got.Tag == "" {
			undecided = true // a digest on one side, only a tag on the other
			continue
		}
		if sameReference(want, got) {
			return true
		}
	}
	return undecided
}

// bareVersion reports whether ref is a version alone ("v1a2b3c4-1760000000"),
// as seed 000's workflow deploys record it: the image's tag.
func bareVersion(ref ImageRef) bool {
	return ref.Tag == "" && ref.Repository != "" && !strings.ContainsAny(ref.Repository, "/.:")
}

// sameReference compares two references without their digests.
func sameReference(want, got ImageRef) bool {
	if want.Repository == "" || got.Repository == "" {
		return false // a bare digest on one side, and no digest on the other
	}
	if bareVersion(want) && got.Tag == want.Repository {
		return true // seed 000's version is the image tag
	}
	return canonicalRepository(want.Repository) == canonicalRepository(got.Repository) && tagOrLatest(want.Tag) == tagOrLatest(got.Tag)
}

// canonicalRepository expands Docker Hub's short forms, as the container
// runtime does: "nginx" is "docker.io/library/nginx".
func canonicalRepository(repo string) string {
	first, rest, found := strings.Cut(repo, "/")
	switch {
	case !found:
		return "docker.io/library/" + repo
	case first == "index.docker.io":
		first = "docker.io"
	case first != "localhost" && !strings.ContainsAny(first, ".:"):
		return "docker.io/" + repo
	}
	if first == "docker.io" && !strings.Contains(rest, "/") {
		return "docker.io/library/" + rest
	}
	return first + "/" + rest
}

func tagOrLatest(tag string) string {
	if tag == "" {
		return "latest"
	}
	return tag
}
