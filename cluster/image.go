package cluster

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ImageRef is a container image reference split into its parts:
// Name is the registry (with its port) and repository, as written.
type ImageRef struct {
	Name   string
	Tag    string
	Digest string
}

// String puts the reference back together.
func (r ImageRef) String() string {
	s := r.Name
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// Why a live version cannot be read; the rollback then alerts instead of
// guessing (seed 000, decision rule 9).
var (
	ErrNoTag          = errors.New("the image has no tag")
	ErrPinnedByDigest = errors.New("the image is pinned by digest only, so no tag can be compared")
)

var (
	// tagPattern is the registry's grammar for a tag.
	tagPattern    = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	digestPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9A-Fa-f]{32,}$`)
)

// ParseImage splits an image reference. The tag is the part after the last
// colon that follows the last slash, so a registry port
// ("registry:5000/team/app") is never taken for a tag.
func ParseImage(s string) (ImageRef, error) {
	if strings.TrimSpace(s) == "" || strings.ContainsAny(s, " \t\n") {
		return ImageRef{}, fmt.Errorf("image %q is not an image reference", s)
	}
	var r ImageRef
	name, digest, hasDigest := strings.Cut(s, "@")
	if hasDigest {
		if !digestPattern.MatchString(digest) {
			return ImageRef{}, fmt.Errorf("image %q: digest %q is not algorithm:hex", s, digest)
		}
		r.Digest = digest
	}
	lastSlash := strings.LastIndexByte(name, '/')
	if i := strings.LastIndexByte(name, ':'); i > lastSlash {
		r.Tag = name[i+1:]
		name = name[:i]
		if !tagPattern.MatchString(r.Tag) {
			return ImageRef{}, fmt.Errorf("image %q: tag %q is not a valid tag", s, r.Tag)
		}
	}
	if name == "" || strings.HasSuffix(name, "/") || strings.HasPrefix(name, "/") {
		return ImageRef{}, fmt.Errorf("image %q has no repository", s)
	}
	r.Name = name
	return r, nil
}

// LiveVersion is the version an image runs: its tag. An image pinned by
// digest alone, or with no tag (an implicit "latest" names no version), has
// no version to compare with the failed one.
func LiveVersion(image string) (string, error) {
	r, err := ParseImage(image)
	if err != nil {
		return "", err
	}
	switch {
	case r.Tag == "" && r.Digest != "":
		return "", fmt.Errorf("image %q: %w", image, ErrPinnedByDigest)
	case r.Tag == "":
		return "", fmt.Errorf("image %q: %w", image, ErrNoTag)
	}
	return r.Tag, nil
}

// TargetImage builds the image to roll back to from the running one: the
// registry (port included) and repository are kept, the tag is replaced by
// version and a digest is dropped (it named the failed build).
func TargetImage(running, version string) (string, error) {
	r, err := ParseImage(running)
	if err != nil {
		return "", err
	}
	if !tagPattern.MatchString(version) {
		return "", fmt.Errorf("target version %q is not a valid image tag", version)
	}
	return ImageRef{Name: r.Name, Tag: version}.String(), nil
}
