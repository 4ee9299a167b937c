package cluster

import (
	"errors"
	"strings"
	"testing"
)

func TestTargetImageKeepsRegistryAndRepositoryAndReplacesTheTag(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		running, version, want, wantErr string
	}{
		"registry with a port is not taken for a tag": {running: "registry:5000/team/app:v2", version: "v1", want: "registry:5000/team/app:v1"},
		"registry with a port and no tag":             {running: "registry:5000/team/app", version: "v1", want: "registry:5000/team/app:v1"},
		"digest only is dropped":                      {running: "registry:5000/team/app@sha256:" + hex64, version: "v1", want: "registry:5000/team/app:v1"},
		"tag and digest: digest named the failed build": {running: "registry:5000/team/app:v2@sha256:" + hex64, version: "v1",
			want: "registry:5000/team/app:v1"},
		"bare name":                      {running: "app:v2", version: "v1", want: "app:v1"},
		"docker hub with library path":   {running: "docker.io/library/app:v2", version: "1.4.0", want: "docker.io/library/app:1.4.0"},
		"localhost registry with a port": {running: "localhost:5000/app:v2", version: "v1", want: "localhost:5000/app:v1"},
		"deep repository path":           {running: "ghcr.io/acme/platform/checkout-api:2024.10.01", version: "2024.09.30", want: "ghcr.io/acme/platform/checkout-api:2024.09.30"},
		"target version that is no tag":  {running: "app:v2", version: "v1/../x", wantErr: "not a valid image tag"},
		"empty target version":           {running: "app:v2", version: "", wantErr: "not a valid image tag"},
		"running image that is empty":    {running: "", version: "v1", wantErr: "not an image reference"},
		"digest that is no digest":       {running: "app@latest", version: "v1", wantErr: "not algorithm:hex"},
		"repository missing":             {running: ":v2", version: "v1", wantErr: "no repository"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := TargetImage(tc.running, tc.version)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("TargetImage(%q, %q) = %q, %v; want an error with %q", tc.running, tc.version, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("TargetImage(%q, %q) = %q, %v; want %q", tc.running, tc.version, got, err, tc.want)
			}
		})
	}
}

func TestLiveVersionReadsTheTagOrSaysWhyItCannot(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		image, want string
		wantErr     error
	}{
		"tag after a registry port":                   {image: "registry:5000/team/app:v2", want: "v2"},
		"tag and digest: the tag is readable":         {image: "registry:5000/team/app:v2@sha256:" + hex64, want: "v2"},
		"pinned by digest only":                       {image: "registry:5000/team/app@sha256:" + hex64, wantErr: ErrPinnedByDigest},
		"no tag: an implicit latest names no version": {image: "registry:5000/team/app", wantErr: ErrNoTag},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := LiveVersion(tc.image)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("LiveVersion(%q) = %q, %v; want %v", tc.image, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("LiveVersion(%q) = %q, %v; want %q", tc.image, got, err, tc.want)
			}
		})
	}
}

func TestParseImageRoundTrips(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"registry:5000/team/app:v2@sha256:" + hex64, "app", "a/b/c:1", "registry:5000/app@sha256:" + hex64} {
		r, err := ParseImage(s)
		if err != nil || r.String() != s {
			t.Errorf("ParseImage(%q).String() = %q, %v", s, r.String(), err)
		}
	}
}

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
