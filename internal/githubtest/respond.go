package githubtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers as GitHub does: {"message": ..., "documentation_url": ...}.
func writeError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, map[string]any{
		"message":           message,
		"documentation_url": "https://docs.github.com/rest",
		"status":            strconv.Itoa(status),
	})
}

func writeValidationFailed(w http.ResponseWriter, err error) {
	var problems []map[string]any
	var verr *ValidationError
	if errors.As(err, &verr) {
		for _, p := range verr.Problems {
			problems = append(problems, map[string]any{"code": "invalid", "message": p})
		}
	}
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{
		"message":           "Validation Failed",
		"errors":            problems,
		"documentation_url": "https://docs.github.com/rest",
		"status":            "422",
	})
}

// decodeBody reads a JSON body the spec check has already accepted; an empty body leaves
// v as it is.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(v); err != nil && err.Error() != "EOF" {
		return fmt.Errorf("decode body: %w", err)
	}
	return nil
}

// Page is the page of items a list request asks for, with GitHub's Link
// header set on w, as the fake's own lists answer (paginate): for a
// handler a test registers.
func Page[T any](w http.ResponseWriter, r *http.Request, items []T) []T { return paginate(w, r, items) }

// paginate answers a list with GitHub's page/per_page (default 30) and a Link header
// pointing at the next and last pages.
func paginate[T any](w http.ResponseWriter, r *http.Request, items []T) []T {
	q := r.URL.Query()
	perPage := atoiDefault(q.Get("per_page"), 30)
	page := atoiDefault(q.Get("page"), 1)
	if perPage < 1 {
		perPage = 30
	}
	if page < 1 {
		page = 1
	}
	last := (len(items) + perPage - 1) / perPage
	if page < last {
		link := func(p int, rel string) string {
			u := *r.URL
			q := u.Query()
			q.Set("page", strconv.Itoa(p))
			q.Set("per_page", strconv.Itoa(perPage))
			u.RawQuery = q.Encode()
			return fmt.Sprintf("<%s>; rel=%q", absoluteURL(r, &u), rel)
		}
		w.Header().Set("Link", link(page+1, "next")+", "+link(last, "last"))
	}
	start := (page - 1) * perPage
	if start >= len(items) {
		return []T{}
	}
	end := min(start+perPage, len(items))
	return items[start:end]
}

func absoluteURL(r *http.Request, u *url.URL) string {
	return "http://" + r.Host + u.RequestURI()
}

func atoiDefault(s string, def int) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return n
}

func atoi64(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

func itoa(n int) string { return strconv.Itoa(n) }

func parseTime(s string) (time.Time, error) { return time.Parse(time.RFC3339, s) }
