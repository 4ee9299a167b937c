package commands

// maxSuggestDistance is how many edits a typo may be from a command and still
// get a suggestion; more than that and the guess would mislead.
const maxSuggestDistance = 2

// suggest returns the command closest to word, or "" when none is close.
func suggest(word string) string {
	best, bestD := "", maxSuggestDistance+1
	for _, s := range Specs {
		if d := distance(word, s.Name); d < bestD {
			best, bestD = s.Name, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b, by runes.
func distance(a, b string) int {
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
