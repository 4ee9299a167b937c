package repoconfig

import (
	"fmt"
	suggestion "github.com/ripcord/ripcord/internal/suggest"
	"strings"
	"unicode"
)

// unknownKeyMessage names the unknown key, suggests the key the user most
// likely meant, and lists the allowed keys so nobody has to open the docs.
func unknownKeyMessage(key string, allowed []string) string {
	msg := fmt.Sprintf("unknown key %q", key)
	if s := suggest(key, allowed); s != "" {
		msg += fmt.Sprintf("; did you mean %s?", s)
	}
	return msg + " (allowed: " + strings.Join(allowed, ", ") + ")"
}

// suggest returns the allowed key closest to key, or "" when none is close.
// camelCase and kebab-case spellings are tried as snake_case first, because
// seed 001's camelCase keys (maxUnavailable) are the likeliest habit.
func suggest(key string, allowed []string) string {
	snake := snakeCase(key)
	if contains(allowed, snake) {
		return snake
	}
	best, bestDist := "", -1
	for _, a := range allowed {
		d := suggestion.Distance(snake, a)
		if bestDist < 0 || d < bestDist {
			best, bestDist = a, d
		}
	}
	// A third of the key's length keeps "max_retry" → "max_retries" while
	// leaving unrelated short keys ("foo") without a misleading suggestion.
	if bestDist >= 0 && bestDist <= max(2, len(snake)/3) && bestDist < len(snake) {
		return best
	}
	return ""
}

func snakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == '-' || r == ' ':
			b.WriteRune('_')
		case unicode.IsUpper(r):
			if i > 0 {
				b.WriteRune('_')
			}
			b.WriteRune(unicode.ToLower(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
