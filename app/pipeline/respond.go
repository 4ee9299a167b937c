package pipeline

import (
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/ripcord/ripcord/internal/suggest"
)

// APIError is the body of every 4xx/5xx of ripcord's API: the message says
// what is wrong and, for bad input, Field names the offending field. Code,
// when set, names the kind of refusal for a client to act on without
// reading the message, which may be reworded.
type APIError struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
	Code  string `json:"code,omitempty"`
}

// CodeAppNotConfigured is the Code of the 503 a request that needs GitHub
// is answered while the server has no GitHub App (NoApp): unlike the other
// 503s, sending it again changes nothing until an operator gives the
// server an App, so a client should stop asking and say so.
const CodeAppNotConfigured = "app_not_configured"

// WriteJSON answers with v as indented JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// WriteError answers with an APIError.
func WriteError(w http.ResponseWriter, status int, field, msg string) {
	WriteJSON(w, status, APIError{Error: msg, Field: field})
}

// WriteNoApp answers a request refused because the server has no GitHub
// App (AppNotConfigured): 503 with no field, since nothing in the request
// is wrong, and CodeAppNotConfigured.
func WriteNoApp(w http.ResponseWriter, msg string) {
	WriteJSON(w, http.StatusServiceUnavailable, APIError{Error: msg, Code: CodeAppNotConfigured})
}

// KnownParams answers 400 naming the first query parameter (by name) that
// is not one of known, with the one most likely meant, and reports whether
// every parameter is known. Ignored, ?env=prod would list the releases of
// every environment as if filtered.
func KnownParams(w http.ResponseWriter, r *http.Request, known ...string) bool {
	q := r.URL.Query()
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if slices.Contains(known, name) {
			continue
		}
		msg := name + ": unknown parameter; this endpoint takes " + strings.Join(known, ", ")
		if meant := suggest.Meant(name, known); meant != "" {
			msg += "; did you mean " + meant + "?"
		}
		WriteError(w, http.StatusBadRequest, name, msg)
		return false
	}
	return true
}
