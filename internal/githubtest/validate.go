package githubtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

// ValidationError says which GitHub operation a request was for (when it resolved to one)
// and what in it GitHub's description does not allow.
type ValidationError struct {
	Method      string
	Path        string // as requested, escaped
	Template    string // empty when no operation matched
	OperationID string
	Problems    []string // each names the parameter or body field
	Err         error    // kin-openapi's error, when it found the problems
}

func (e *ValidationError) Error() string {
	op := e.Method + " " + e.Path
	if e.Template != "" {
		op = fmt.Sprintf("%s %s (%s, %s)", e.Method, e.Path, e.OperationID, e.Template)
	}
	return op + ": " + strings.Join(e.Problems, "; ")
}

func (e *ValidationError) Unwrap() error { return e.Err }

// enterprisePrefix is where go-github's WithEnterpriseURLs puts the REST API; GitHub's own
// paths never start with it.
const enterprisePrefix = "/api/v3"

// apiPath is the escaped request path as GitHub's description spells it.
func apiPath(u *url.URL) string {
	p := u.EscapedPath()
	if rest, ok := strings.CutPrefix(p, enterprisePrefix); ok && strings.HasPrefix(rest, "/") {
		return rest
	}
	return p
}

// Validate checks a request — method, path, path and query parameters, body — against
// GitHub's description. body is the request body (r.Body is not read). A nil error means
// GitHub would accept the request's shape; otherwise the error is a *ValidationError.
func (s *Spec) Validate(r *http.Request, body []byte) error {
	path := apiPath(r.URL)
	rt, params, err := s.router.match(r.Method, path)
	if err != nil {
		return &ValidationError{Method: r.Method, Path: path, Problems: []string{err.Error()}}
	}
	return s.validateRoute(r, body, rt, params)
}

func (s *Spec) validateRoute(r *http.Request, body []byte, rt *route, params map[string]string) error {
	verr := &ValidationError{Method: r.Method, Path: apiPath(r.URL), Template: rt.template, OperationID: rt.op.OperationID}
	verr.Problems = append(verr.Problems, unknownQueryParams(rt, r.URL.Query())...)
	body = adaptKnownDifferences(rt.op, body)
	req := r.Clone(context.Background())
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	input := &openapi3filter.RequestValidationInput{
		Request:    req,
		PathParams: params,
		Route: &routers.Route{
			Spec: s.doc, Path: rt.template, PathItem: rt.item, Method: rt.method, Operation: rt.op,
		},
		Options: &openapi3filter.Options{
			MultiError:                        true,
			RejectWhenRequestBodyNotSpecified: true,
			AuthenticationFunc:                openapi3filter.NoopAuthenticationFunc,
		},
	}
	if err := openapi3filter.ValidateRequest(context.Background(), input); err != nil {
		verr.Err = err
		verr.Problems = append(verr.Problems, describe(err)...)
	}
	if len(verr.Problems) == 0 {
		return nil
	}
	return verr
}

// unknownQueryParams names query parameters the operation does not declare. GitHub
// ignores them, which is exactly why a misspelt per_page or a filter sent to the wrong
// endpoint would otherwise go unnoticed.
func unknownQueryParams(rt *route, query url.Values) []string {
	declared := map[string]bool{}
	for _, params := range []openapi3.Parameters{rt.item.Parameters, rt.op.Parameters} {
		for _, p := range params {
			if p.Value != nil && p.Value.In == openapi3.ParameterInQuery {
				declared[p.Value.Name] = true
			}
		}
	}
	var problems []string
	for name := range query {
		if !declared[name] {
			problems = append(problems, fmt.Sprintf("query parameter %q is not one this operation takes", name))
		}
	}
	sort.Strings(problems)
	return problems
}

// adaptKnownDifferences rewrites a body GitHub accepts into the form the packaged
// description allows:
//
//   - JSON null for an optional body is no body. ghinstallation (under go-githubapp) asks
//     for every installation token with the body null.
//   - A bare JSON array (or string) is wrapped into the object the description keeps.
//     GitHub accepts e.g. POST …/issues/{n}/labels with ["bug"] (go-github sends that),
//     but the description lost the non-object alternatives of such bodies and keeps only
//     {"labels": [...]}.
func adaptKnownDifferences(op *openapi3.Operation, body []byte) []byte {
	trimmed := bytes.TrimSpace(body)
	if string(trimmed) == "null" && (op.RequestBody == nil || op.RequestBody.Value == nil || !op.RequestBody.Value.Required) {
		return nil
	}
	if len(trimmed) == 0 || (trimmed[0] != '[' && trimmed[0] != '"') {
		return body
	}
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return body
	}
	media := op.RequestBody.Value.Content.Get("application/json")
	if media == nil || media.Schema == nil || media.Schema.Value == nil || len(media.Schema.Value.OneOf) == 0 {
		return body
	}
	for _, alt := range media.Schema.Value.OneOf {
		if alt.Value == nil || len(alt.Value.Properties) != 1 {
			continue
		}
		for name, prop := range alt.Value.Properties {
			if prop.Value == nil || !prop.Value.Type.Is(openapi3.TypeArray) {
				continue
			}
			if trimmed[0] == '"' {
				return []byte(fmt.Sprintf(`{%q:[%s]}`, name, trimmed))
			}
			return []byte(fmt.Sprintf(`{%q:%s}`, name, trimmed))
		}
	}
	return body
}

// describe turns kin-openapi's errors into one line per problem that names the parameter
// or body field, leaving out the schema dumps its messages carry.
func describe(err error) []string {
	switch e := err.(type) {
	case openapi3.MultiError:
		var out []string
		for _, inner := range e {
			out = append(out, describe(inner)...)
		}
		return out
	case *openapi3filter.RequestError:
		return describeRequestError(e)
	case *openapi3.SchemaError:
		return []string{describeSchemaError(e)}
	}
	if inner := errors.Unwrap(err); inner != nil {
		return describe(inner)
	}
	return []string{err.Error()}
}

func describeRequestError(e *openapi3filter.RequestError) []string {
	where := "request"
	switch {
	case e.Parameter != nil:
		where = fmt.Sprintf("%s parameter %q", e.Parameter.In, e.Parameter.Name)
	case e.RequestBody != nil:
		where = "body"
	}
	if e.Err == nil {
		return []string{where + ": " + e.Reason}
	}
	var out []string
	for _, d := range describe(e.Err) {
		out = append(out, where+": "+d)
	}
	return out
}

func describeSchemaError(e *openapi3.SchemaError) string {
	var prefix string
	if pointer := e.JSONPointer(); len(pointer) > 0 {
		prefix = fmt.Sprintf("field %q: ", strings.Join(pointer, "."))
	}
	if e.Origin != nil && e.Origin != openapi3.ErrOneOfConflict {
		inner := describe(e.Origin)
		if e.SchemaField == "oneOf" || e.SchemaField == "anyOf" {
			return prefix + "matches none of the allowed forms: " + strings.Join(inner, " | ")
		}
		return prefix + strings.Join(inner, "; ")
	}
	if e.SchemaField == "anyOf" && e.Schema != nil {
		// kin-openapi keeps no reasons for anyOf; ask each alternative for its own.
		var inner []string
		for _, alt := range e.Schema.AnyOf {
			if alt.Value == nil {
				continue
			}
			if err := alt.Value.VisitJSON(e.Value, openapi3.MultiErrors(), openapi3.VisitAsRequest()); err != nil {
				inner = append(inner, strings.Join(describe(err), "; "))
			}
		}
		if len(inner) > 0 {
			return prefix + "matches none of the allowed forms: " + strings.Join(inner, " | ")
		}
	}
	reason := e.Reason
	if reason == "" {
		reason = fmt.Sprintf("does not match the schema's %q", e.SchemaField)
	}
	return prefix + reason
}
