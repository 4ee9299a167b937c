package commands

import suggestion "github.com/ripcord/ripcord/internal/suggest"

// maxSuggestDistance is how many edits a typo may be from a command and still
// get a suggestion; more than that and the guess would mislead.
const maxSuggestDistance = 2

// suggest returns the command closest to word, or "" when none is close.
func suggest(word string) string {
	best, bestD := "", maxSuggestDistance+1
	for _, s := range Specs {
		if d := suggestion.Distance(word, s.Name); d < bestD {
			best, bestD = s.Name, d
		}
	}
	return best
}
