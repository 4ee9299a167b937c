package records

import "strings"

// RunsImage reports whether observed, the images a workload runs, contain
// the record's image: by digest when both have one, otherwise by reference
// (repository and tag, Docker Hub's short names expanded; a bare version,
// as workflow deploys record, is compared with the tag). It is true when
// either side says nothing to compare: a record with no image, or a fact
// that reports no images, cannot contradict the other.
func (r Record) RunsImage(observed []string) bool {
	want := ParseImage(r.Image)
	wantDigest := r.ResolvedDigest()
	if len(observed) == 0 || (strings.TrimSpace(r.Image) == "" && wantDigest == "") {
		return true
	}
	for _, img := range observed {
		got := ParseImage(img)
		if wantDigest != "" && got.Digest != "" {
			if got.Digest == wantDigest {
				return true
			}
			continue
		}
		if sameReference(want, got) {
			return true
		}
	}
	return false
}

// sameReference compares two references without their digests.
func sameReference(want, got ImageRef) bool {
	if want.Repository == "" || got.Repository == "" {
		return false // a bare digest on one side, and no digest on the other
	}
	if want.Tag == "" && !strings.ContainsAny(want.Repository, "/.:") {
		// A bare version ("v1a2b3c4-1760000000"): seed 000's version is
		// the image tag.
		if got.Tag == want.Repository {
			return true
		}
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
