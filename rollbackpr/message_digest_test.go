package rollbackpr

import "testing"

func TestImageRefDoesNotRepeatAPinnedDigest(t *testing.T) {
	const d = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	cases := map[string]struct{ image, digest, want string }{
		"image pins the digest": {"reg.example/app:v2@" + d, d, "reg.example/app:v2@" + d},
		"tag plus digest":       {"reg.example/app:v2", d, "reg.example/app:v2@" + d},
		"digest only":           {"", d, d},
	}
	for name, c := range cases {
		if got := imageRef(c.image, c.digest); got != c.want {
			t.Errorf("%s: imageRef = %q, want %q", name, got, c.want)
		}
	}
}
