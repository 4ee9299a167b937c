// Package suggest finds the known word a typo was meant to be, for
// "did you mean …?" answers in config errors and comment commands.
package suggest

import "strings"

// Distance is the Levenshtein distance between a and b, by runes.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// Closest is the word of known nearest to word by Distance (the first of
// those as near), and that distance; "" and -1 when known is empty.
func Closest(word string, known []string) (string, int) {
	best, bestDist := "", -1
	for _, k := range known {
		if d := Distance(word, k); bestDist < 0 || d < bestDist {
			best, bestDist = k, d
		}
	}
	return best, bestDist
}

// Near reports whether a word at distance d from a word of n runes is
// near enough to suggest: at most 2 edits, or a third of the word, and
// fewer edits than the word has.
func Near(d, n int) bool { return d >= 0 && d <= max(2, n/3) && d < n }

// Meant is the word of known that word most likely meant: the only one it
// begins (env for environment), else the nearest by Distance if Near
// enough; "" when none is.
func Meant(word string, known []string) string {
	var prefixed []string
	for _, k := range known {
		if strings.HasPrefix(k, word) {
			prefixed = append(prefixed, k)
		}
	}
	if len(prefixed) == 1 && len(word) >= 2 {
		return prefixed[0]
	}
	if best, d := Closest(word, known); Near(d, len(word)) {
		return best
	}
	return ""
}
