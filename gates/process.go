package gates

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// ITSM requires a change reference in the PR body matching BodyField
// (repoconfig's process.itsm.body_field).
type ITSM struct{ BodyField string }

// Name, Class and Evaluate implement Gate.
func (ITSM) Name() string { return NameITSM }
func (ITSM) Class() Class { return Process }
func (g ITSM) Evaluate(_ context.Context, s Subject) Verdict {
	re, err := regexp.Compile(g.BodyField)
	if err != nil || g.BodyField == "" {
		return Errored(fmt.Sprintf("process.itsm.body_field %q is not a usable regular expression", g.BodyField))
	}
	if m := re.FindString(s.Body); m != "" {
		return Passed(fmt.Sprintf("change reference %s found in the pull request body", m))
	}
	return Failed(fmt.Sprintf("the pull request body has no change reference matching `%s`", g.BodyField))
}

// QA requires one of Labels on the PR (process.qa.labels).
type QA struct{ Labels []string }

// Name, Class and Evaluate implement Gate.
func (QA) Name() string { return NameQA }
func (QA) Class() Class { return Process }
func (g QA) Evaluate(_ context.Context, s Subject) Verdict {
	if len(g.Labels) == 0 {
		return Errored("process.qa.labels names no label")
	}
	for _, l := range s.Labels {
		if g.Names(l) {
			return Passed(fmt.Sprintf("label %q is on the pull request", l))
		}
	}
	return Failed(fmt.Sprintf("the pull request needs one of the labels %s", quoteAll(g.Labels)))
}

// Names reports whether label is one of g's Labels, compared as GitHub
// compares label names: case-insensitively.
func (g QA) Names(label string) bool {
	return slices.ContainsFunc(g.Labels, func(l string) bool { return strings.EqualFold(l, label) })
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
