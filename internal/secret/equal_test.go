package secret

import "testing"

func TestEqual(t *testing.T) {
	const want = "s3cret-token-0123456789"
	for _, c := range []struct {
		name string
		got  string
		ok   bool
	}{
		{"the token", want, true},
		{"a wrong token of the same length", "s3cret-token-0123456780", false},
		{"a shorter token, its prefix", want[:len(want)-1], false},
		{"a longer token, the token and more", want + "0", false},
		{"an empty token", "", false},
		{"another case", "S3CRET-TOKEN-0123456789", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Equal(c.got, want); got != c.ok {
				t.Errorf("Equal(%q, %q) = %v, want %v", c.got, want, got, c.ok)
			}
		})
	}
}
