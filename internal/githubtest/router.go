package githubtest

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// kin-openapi's own routers match one path segment per parameter and only the hosts in the
// description's servers list (api.github.com). GitHub marks some parameters x-multi-segment
// (contents/{path}, git/ref/{ref}, commits/{ref}, ...) — on the operation's parameter, so
// the same template can be multi-segment for one method and not another — and a fake
// server runs on 127.0.0.1. Hence this router.

// Match is the GitHub operation a request resolves to.
type Match struct {
	Method      string
	Template    string // e.g. /repos/{owner}/{repo}/contents/{path}
	OperationID string // e.g. repos/get-content
	Params      map[string]string
}

type route struct {
	method   string
	template string
	item     *openapi3.PathItem
	op       *openapi3.Operation
	re       *regexp.Regexp
	names    []string
	literal  int
	// prefix (the template up to its first parameter) and slashes (how
	// many the template has; -1 with a multi-segment parameter) rule out
	// most routes before the regexp runs: a request is matched against a
	// thousand of them, and the regexps were 4 % of an end-to-end test
	// package's CPU.
	prefix  string
	slashes int
}

type router struct {
	byMethod map[string][]*route
	byKey    map[string]*route // "METHOD /template"
}

var paramInTemplate = regexp.MustCompile(`\{([^}]+)\}`)

func newRouter(doc *openapi3.T) (*router, error) {
	r := &router{byMethod: map[string][]*route{}, byKey: map[string]*route{}}
	for template, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			rt, err := compileRoute(method, template, item, op)
			if err != nil {
				return nil, err
			}
			r.byMethod[method] = append(r.byMethod[method], rt)
			r.byKey[method+" "+template] = rt
		}
	}
	for _, routes := range r.byMethod {
		sort.Slice(routes, func(i, j int) bool { return moreSpecific(routes[i], routes[j]) })
	}
	return r, nil
}

// moreSpecific prefers fewer parameters, then more literal text, so that
// /repos/{owner}/{repo}/pulls/comments wins over /repos/{owner}/{repo}/pulls/{pull_number}
// and commits/{ref}/status over a multi-segment commits/{ref}.
func moreSpecific(a, b *route) bool {
	if len(a.names) != len(b.names) {
		return len(a.names) < len(b.names)
	}
	if a.literal != b.literal {
		return a.literal > b.literal
	}
	return a.template < b.template
}

func compileRoute(method, template string, item *openapi3.PathItem, op *openapi3.Operation) (*route, error) {
	multi := multiSegmentParams(item, op)
	var pattern strings.Builder
	pattern.WriteString("^")
	rt := &route{method: method, template: template, item: item, op: op, slashes: strings.Count(template, "/")}
	rt.prefix, _, _ = strings.Cut(template, "{")
	last := 0
	for _, loc := range paramInTemplate.FindAllStringSubmatchIndex(template, -1) {
		literal := template[last:loc[0]]
		pattern.WriteString(regexp.QuoteMeta(literal))
		rt.literal += len(literal)
		name := template[loc[2]:loc[3]]
		rt.names = append(rt.names, name)
		if multi[name] {
			rt.slashes = -1
			pattern.WriteString("(.+)")
		} else {
			pattern.WriteString("([^/]+)")
		}
		last = loc[1]
	}
	pattern.WriteString(regexp.QuoteMeta(template[last:]))
	rt.literal += len(template) - last
	pattern.WriteString("$")
	re, err := regexp.Compile(pattern.String())
	if err != nil {
		return nil, fmt.Errorf("compile route %s %s: %w", method, template, err)
	}
	rt.re = re
	return rt, nil
}

func multiSegmentParams(item *openapi3.PathItem, op *openapi3.Operation) map[string]bool {
	multi := map[string]bool{}
	for _, params := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, p := range params {
			if p.Value != nil && p.Value.In == openapi3.ParameterInPath && p.Value.Extensions["x-multi-segment"] == true {
				multi[p.Value.Name] = true
			}
		}
	}
	return multi
}

// match resolves a method and an escaped path (as in URL.EscapedPath) to a route and its
// unescaped path parameters.
func (r *router) match(method, escapedPath string) (*route, map[string]string, error) {
	slashes := strings.Count(escapedPath, "/")
	for _, rt := range r.byMethod[method] {
		if rt.slashes >= 0 && rt.slashes != slashes || !strings.HasPrefix(escapedPath, rt.prefix) {
			continue
		}
		groups := rt.re.FindStringSubmatch(escapedPath)
		if groups == nil {
			continue
		}
		params := make(map[string]string, len(rt.names))
		for i, name := range rt.names {
			value, err := url.PathUnescape(groups[i+1])
			if err != nil {
				return nil, nil, fmt.Errorf("path parameter %q: %w", name, err)
			}
			params[name] = value
		}
		return rt, params, nil
	}
	if others := r.methodsFor(method, escapedPath); len(others) > 0 {
		return nil, nil, fmt.Errorf("GitHub has no %s %s (that path takes %s)", method, escapedPath, strings.Join(others, ", "))
	}
	return nil, nil, fmt.Errorf("GitHub has no operation %s %s", method, escapedPath)
}

func (r *router) methodsFor(exclude, escapedPath string) []string {
	var methods []string
	for method, routes := range r.byMethod {
		if method == exclude {
			continue
		}
		for _, rt := range routes {
			if rt.re.MatchString(escapedPath) {
				methods = append(methods, method)
				break
			}
		}
	}
	sort.Strings(methods)
	return methods
}

// Match resolves a request method and path (escaped, as in URL.EscapedPath, without the
// /api/v3 prefix of GitHub Enterprise) to GitHub's operation.
func (s *Spec) Match(method, escapedPath string) (Match, error) {
	rt, params, err := s.router.match(strings.ToUpper(method), escapedPath)
	if err != nil {
		return Match{}, err
	}
	return Match{Method: rt.method, Template: rt.template, OperationID: rt.op.OperationID, Params: params}, nil
}

// HasOperation reports whether GitHub has the operation "METHOD /template".
func (s *Spec) HasOperation(method, template string) bool {
	return s.router.byKey[strings.ToUpper(method)+" "+template] != nil
}
