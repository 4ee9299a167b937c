package repoconfig

import "testing"

func TestSuggest(t *testing.T) {
	allowed := []string{"max_retries", "initial_backoff", "multiplier", "max_backoff", "failure_types"}
	tests := []struct {
		name, key, want string
	}{
		{"missing plural", "max_retry", "max_retries"},
		{"camelCase", "maxBackoff", "max_backoff"},
		{"kebab-case", "initial-backoff", "initial_backoff"},
		{"one letter off", "multiplyer", "multiplier"},
		{"unrelated key gets no guess", "timeout", ""},
		{"short unrelated key gets no guess", "foo", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := suggest(tt.key, allowed); got != tt.want {
				t.Errorf("suggest(%q) = %q, want %q", tt.key, got, tt.want)
			}
		})
	}
}
