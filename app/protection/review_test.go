package protection

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestShortenKeepsTheCommentWithinGitHubsLimitAndValidUTF8(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"short enough", "gates passed", 20, "gates passed"},
		{"exactly the limit", "abcde", 5, "abcde"},
		{"cut, with the ellipsis inside the limit", "abcdefgh", 6, "abc…"},
		// "é" is two bytes: a cut at 4 bytes would split the second one.
		{"never inside a character", "aéééé", 7, "aé…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := shorten(tc.in, tc.max)
			if got != tc.want {
				t.Errorf("shorten(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
			if len(got) > tc.max || !utf8.ValidString(got) {
				t.Errorf("shorten(%q, %d) = %q: %d bytes, valid UTF-8 %v", tc.in, tc.max, got, len(got), utf8.ValidString(got))
			}
		})
	}
	long := strings.Repeat("production ✓ ", 200)
	if got := shorten(long, maxComment); len(got) > maxComment || !utf8.ValidString(got) {
		t.Errorf("a long comment shortened to %d bytes (limit %d), valid UTF-8 %v", len(got), maxComment, utf8.ValidString(got))
	}
}
