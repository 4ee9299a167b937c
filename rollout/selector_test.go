package rollout

import (
	"errors"
	"strings"
	"testing"
)

func TestSelectorMatches(t *testing.T) {
	canary := map[string]string{"region": "eu-1", "az": "eu-1a", "canary": "true"}
	plain := map[string]string{"region": "eu-1", "az": "eu-1b"}
	us := map[string]string{"region": "us-1", "az": "us-1a"}
	tests := []struct {
		name     string
		selector string
		labels   map[string]string
		want     bool
	}{
		{"k=v matches the value", "canary=true", canary, true},
		{"k=v needs the label", "canary=true", plain, false},
		{"k=v compares the whole value", "region=eu", plain, false},
		{"k!=v rejects the value", "canary!=true", canary, false},
		{"k!=v matches targets without the label", "canary!=true", plain, true},
		{"k in (a, b) matches one of them", "region in (eu-2, us-1)", us, true},
		{"k in (a, b) rejects others", "region in (eu-2, us-1)", plain, false},
		{"k in (…) needs the label", "tier in (web)", plain, false},
		{"k notin (a, b) rejects them", "region notin (eu-1, eu-2)", plain, false},
		{"k notin (a, b) matches others", "region notin (eu-1, eu-2)", us, true},
		{"k notin (…) matches targets without the label", "tier notin (db)", plain, true},
		{"all conditions must hold", "region=eu-1, canary!=true", canary, false},
		{"all conditions hold", "region=eu-1, canary!=true", plain, true},
		{"commas inside a list do not split conditions", "region in (eu-1, us-1), az=us-1a", us, true},
		{"spaces are free around tokens", "  region = eu-1 ,az  in(eu-1b)  ", plain, true},
		{"keys may carry a prefix", "example.com/team=web", map[string]string{"example.com/team": "web"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := ParseSelector(tt.selector)
			if err != nil {
				t.Fatalf("ParseSelector(%q): %v", tt.selector, err)
			}
			if got := sel.Matches(tt.labels); got != tt.want {
				t.Errorf("%q on %v: got %v, want %v", tt.selector, tt.labels, got, tt.want)
			}
		})
	}
}

func TestSelectorString(t *testing.T) {
	sel, err := ParseSelector("region in(eu-2,us-1),canary != true , a=b,c notin (x)")
	if err != nil {
		t.Fatal(err)
	}
	want := "region in (eu-2, us-1), canary!=true, a=b, c notin (x)"
	if got := sel.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	again, err := ParseSelector(sel.String())
	if err != nil || again.String() != want {
		t.Errorf("canonical form does not read back: %v, %v", again, err)
	}
}

func TestSelectorSyntaxErrors(t *testing.T) {
	tests := []struct {
		name     string
		selector string
		offset   int
		message  string
	}{
		{"empty selector", "  ", 0, "selector is empty"},
		{"value missing", "region=", 7, `expected a value after "region="`},
		{"double equals is not the grammar", "region==eu-1", 7, `expected a value after "region="`},
		{"key missing", "=eu-1", 0, "expected a label key"},
		{"bang without equals", "canary!true", 6, `"!" must be followed by "="`},
		{"unknown operator", "region is eu-1", 7, "expected =, !=, in or notin"},
		{"key alone", "canary", 6, "expected =, !=, in or notin"},
		{"trailing comma", "region=eu-1,", 11, "nothing after the last comma"},
		{"empty condition between commas", "a=b,,c=d", 4, "expected a label key"},
		{"missing comma between conditions", "a=b c=d", 4, "expected a comma"},
		{"in without parentheses", "region in eu-1", 10, "expected ( after in"},
		{"empty list", "region in ()", 11, "the list after in is empty"},
		{"unclosed list", "region notin (eu-1, eu-2", 24, "expected , or ) in the list after notin"},
		{"trailing comma in a list", "region in (eu-1,)", 16, "expected a value in the list after in"},
		{"quoted value would never match", `canary="true"`, 7, "drop quotes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSelector(tt.selector)
			var se *SelectorError
			if !errors.As(err, &se) {
				t.Fatalf("ParseSelector(%q): want a *SelectorError, got %v", tt.selector, err)
			}
			if se.Offset != tt.offset || !strings.Contains(se.Message, tt.message) {
				t.Errorf("ParseSelector(%q) = offset %d %q; want offset %d containing %q", tt.selector, se.Offset, se.Message, tt.offset, tt.message)
			}
		})
	}
}
