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
