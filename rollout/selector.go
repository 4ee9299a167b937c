package rollout

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Operator is how a condition compares a label.
type Operator string

const (
	Equals    Operator = "="
	NotEquals Operator = "!="
	In        Operator = "in"
	NotIn     Operator = "notin"
)

// Condition is one comma-separated part of a selector.
type Condition struct {
	Key      string
	Operator Operator
	Values   []string // one for = and !=
}

// Selector picks targets by their labels: every condition must hold.
type Selector struct {
	Conditions []Condition
}

// SelectorError says where a selector stops making sense.
type SelectorError struct {
	Offset  int // 0-based byte offset into the selector
	Message string
}

func (e *SelectorError) Error() string {
	return fmt.Sprintf("at character %d: %s", e.Offset+1, e.Message)
}

// Matches reports whether labels satisfy every condition. As the seed says,
// k!=v (and k notin (…)) also match targets without the label k.
func (s Selector) Matches(labels map[string]string) bool {
	for _, c := range s.Conditions {
		if !c.Matches(labels) {
			return false
		}
	}
	return true
}

// Matches reports whether labels satisfy c.
func (c Condition) Matches(labels map[string]string) bool {
	v, ok := labels[c.Key]
	found := ok && slices.Contains(c.Values, v)
	switch c.Operator {
	case Equals, In:
		return found
	case NotEquals, NotIn:
		return !found
	}
	return false
}

// String writes the selector back in its canonical form.
func (s Selector) String() string {
	parts := make([]string, len(s.Conditions))
	for i, c := range s.Conditions {
		parts[i] = c.String()
	}
	return strings.Join(parts, ", ")
}

func (c Condition) String() string {
	switch c.Operator {
	case In, NotIn:
		return fmt.Sprintf("%s %s (%s)", c.Key, c.Operator, strings.Join(c.Values, ", "))
	}
	return c.Key + string(c.Operator) + strings.Join(c.Values, "")
}

// ParseSelector reads the seed's grammar: comma-separated conditions, each
// k=v, k!=v, k in (a, b) or k notin (a, b). The error is a *SelectorError.
func ParseSelector(s string) (Selector, error) {
	p := &selectorParser{lex: lexSelector(s)}
	if p.peek().kind == tokEnd {
		return Selector{}, &SelectorError{0, `selector is empty; write conditions like "region=eu-1, canary!=true"`}
	}
	var sel Selector
	for {
		c, err := p.condition()
		if err != nil {
			return Selector{}, err
		}
		sel.Conditions = append(sel.Conditions, c)
		switch t := p.next(); t.kind {
		case tokEnd:
			return sel, nil
		case tokComma:
			if p.peek().kind == tokEnd {
				return Selector{}, p.errorf(t, "nothing after the last comma; remove it or add a condition")
			}
		default:
			return Selector{}, p.errorf(t, "expected a comma between conditions, found %s", t)
		}
	}
}

type selectorParser struct {
	lex []token
	i   int
}

func (p *selectorParser) peek() token { return p.lex[p.i] }

func (p *selectorParser) next() token {
	t := p.lex[p.i]
	if t.kind != tokEnd {
		p.i++
	}
	return t
}

func (p *selectorParser) errorf(t token, format string, args ...any) error {
	return &SelectorError{Offset: t.offset, Message: fmt.Sprintf(format, args...)}
}

func (p *selectorParser) condition() (Condition, error) {
	key := p.next()
	if key.kind != tokWord {
		return Condition{}, p.errorf(key, "expected a label key, found %s", key)
	}
	op := p.next()
	switch {
	case op.kind == tokEquals || op.kind == tokNotEquals:
		v := p.next()
		if v.kind != tokWord {
			return Condition{}, p.errorf(v, "expected a value after %q, found %s", key.text+op.text, v)
		}
		return Condition{Key: key.text, Operator: Operator(op.text), Values: []string{v.text}}, nil
	case op.kind == tokWord && (op.text == string(In) || op.text == string(NotIn)):
		values, err := p.list(op.text)
		return Condition{Key: key.text, Operator: Operator(op.text), Values: values}, err
	case op.kind == tokBang:
		return Condition{}, p.errorf(op, `"!" must be followed by "=" (k!=v)`)
	}
	return Condition{}, p.errorf(op, "expected =, !=, in or notin after %q, found %s", key.text, op)
}

// list reads "(a, b)" after in or notin.
func (p *selectorParser) list(op string) ([]string, error) {
	if t := p.next(); t.kind != tokOpen {
		return nil, p.errorf(t, "expected ( after %s, as in %s (a, b); found %s", op, op, t)
	}
	var values []string
	for {
		v := p.next()
		if v.kind != tokWord {
			if v.kind == tokClose && len(values) == 0 {
				return nil, p.errorf(v, "the list after %s is empty; name at least one value", op)
			}
			return nil, p.errorf(v, "expected a value in the list after %s, found %s", op, v)
		}
		values = append(values, v.text)
		switch t := p.next(); t.kind {
		case tokClose:
			return values, nil
		case tokComma:
		default:
			return nil, p.errorf(t, "expected , or ) in the list after %s, found %s", op, t)
		}
	}
}

type tokenKind int

const (
	tokEnd tokenKind = iota
	tokWord
	tokEquals
	tokNotEquals
	tokBang
	tokComma
	tokOpen
	tokClose
	tokBad
)

type token struct {
	kind   tokenKind
	text   string
	offset int
}

func (t token) String() string {
	switch t.kind {
	case tokEnd:
		return "the end"
	case tokBad:
		return fmt.Sprintf("%q (labels are compared as plain text: drop quotes and spaces)", t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

// wordBreak ends a key or value: the grammar's punctuation, whitespace, and
// quotes, which would otherwise become part of a label value and never match.
func wordBreak(r rune) bool {
	return unicode.IsSpace(r) || strings.ContainsRune(`=!,()"'`, r)
}

// lexSelector splits a selector into tokens; the last is always tokEnd.
func lexSelector(s string) []token {
	var out []token
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case unicode.IsSpace(r):
			i += size
		case strings.HasPrefix(s[i:], "!="):
			out = append(out, token{tokNotEquals, "!=", i})
			i += 2
		case r == '!':
			out = append(out, token{tokBang, "!", i})
			i++
		case r == '=':
			out = append(out, token{tokEquals, "=", i})
			i++
		case r == ',':
			out = append(out, token{tokComma, ",", i})
			i++
		case r == '(':
			out = append(out, token{tokOpen, "(", i})
			i++
		case r == ')':
			out = append(out, token{tokClose, ")", i})
			i++
		case r == '"' || r == '\'':
			out = append(out, token{tokBad, string(r), i})
			i++
		default:
			end := strings.IndexFunc(s[i:], wordBreak)
			if end < 0 {
				end = len(s) - i
			}
			out = append(out, token{tokWord, s[i : i+end], i})
			i += end
		}
	}
	return append(out, token{tokEnd, "", len(s)})
}
