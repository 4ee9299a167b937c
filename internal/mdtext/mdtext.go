// Package mdtext is the room for text that ripcord writes into markdown
// GitHub renders (replies, check runs) but did not write itself: what a
// commenter, a token holder or an upstream typed. Shown as it came, such
// text could mention whoever its author chose through ripcord, or put a
// link or HTML of theirs in ripcord's name.
package mdtext

import "strings"

// CodeSpan shows s, which someone else typed, as inline code that s cannot
// end early: the fence is one backtick longer than the longest run in s.
// Otherwise a word like a`@acme/security` would close the span and have
// ripcord's text mention whoever the author chose.
func CodeSpan(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	if longest == 0 {
		return "`" + s + "`"
	}
	fence := strings.Repeat("`", longest+1)
	return fence + " " + s + " " + fence
}

// Inert is s as it is when GitHub's markdown would render none of it as a
// mention, a link, a reference or HTML, else s as a CodeSpan, where it
// renders as typed. Plain text stays plain, so a gate reading reads as
// prose, and only text that could do something is fenced.
func Inert(s string) string {
	if !active(s) {
		return s
	}
	return CodeSpan(s)
}

// active reports whether markdown could make more of s than its text:
// @mentions and email autolinks (@), HTML, autolinks and entities (< > &),
// links and images ([ ]), issue references (#), and the bare URLs GitHub
// links (://, www.).
func active(s string) bool {
	if strings.ContainsAny(s, "@<>&[]#") || strings.Contains(s, "://") {
		return true
	}
	return strings.Contains(strings.ToLower(s), "www.")
}
