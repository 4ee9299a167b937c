package configload

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/repoconfig"
)

// maxConfigBytes bounds a body of POST /api/v1/validate; GitHub's contents
// API serves files up to 1 MiB inline, so a larger config could not be read.
const maxConfigBytes = 1 << 20

// ValidateResponse is the answer of POST /api/v1/validate.
type ValidateResponse struct {
	Valid    bool          `json:"valid"`
	Problems []ProblemJSON `json:"problems"`
}

// ProblemJSON is a repoconfig.Problem as the API spells it.
type ProblemJSON struct {
	Path    string `json:"path"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Message string `json:"message"`
}

// validateRequest is the JSON form of the body: {"content": "<the YAML>"}.
type validateRequest struct {
	Content *string `json:"content"`
}

// Validate checks a config file: data is the file itself.
func Validate(data []byte) ValidateResponse { return ValidateWith(data, repoconfig.Options{}) }

// ValidateWith checks a config file against a server's options (its
// rollout.max_parallel).
func ValidateWith(data []byte, opts repoconfig.Options) ValidateResponse {
	_, problems := repoconfig.LoadWith(data, opts)
	out := ValidateResponse{Valid: len(problems) == 0, Problems: []ProblemJSON{}}
	for _, p := range problems {
		out.Problems = append(out.Problems, ProblemJSON{Path: p.Path, Line: p.Line, Column: p.Column, Message: p.Message})
	}
	return out
}

// validateHandler is POST /api/v1/validate. The body is the YAML file, or,
// with Content-Type application/json, {"content": "..."}. A body that is a
// JSON object with a string "content" and nothing else is taken as the JSON
// form whatever its type, since it can never be a valid config itself.
func validateHandler(w http.ResponseWriter, r *http.Request) { validate(w, r, repoconfig.Options{}) }

// validateFor is the handler for a server with these options.
func validateFor(opts repoconfig.Options) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { validate(w, r, opts) }
}

func validate(w http.ResponseWriter, r *http.Request, opts repoconfig.Options) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxConfigBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		pipeline.WriteError(w, http.StatusRequestEntityTooLarge, "", "the config is larger than 1 MiB, more than GitHub serves inline")
		return
	case err != nil:
		// A body cut short (the client hung up, or sent less than its
		// Content-Length) or a broken chunked encoding says nothing of the
		// config's size: answering 413 sent people to shrink a small file.
		pipeline.WriteError(w, http.StatusBadRequest, "", "could not read the request body: "+err.Error())
		return
	}
	content, field, err := configFromBody(r.Header.Get("Content-Type"), body)
	if err != nil {
		pipeline.WriteError(w, http.StatusBadRequest, field, err.Error())
		return
	}
	pipeline.WriteJSON(w, http.StatusOK, ValidateWith(content, opts))
}

// configFromBody returns the file a request carries, or the field that is wrong.
func configFromBody(contentType string, body []byte) ([]byte, string, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt != "application/json" {
		if c, ok := jsonWrapped(body); ok {
			return c, "", nil
		}
		return body, "", nil
	}
	var req validateRequest
	if err := pipeline.DecodeStrict(body, &req, "", `{"content": "<the YAML file>"}`); err != nil {
		var fe *pipeline.FieldError
		errors.As(err, &fe)
		if fe.Field == "content" {
			_, got, _ := strings.Cut(fe.Message, ", ")
			return nil, fe.Field, fmt.Errorf("content: expected a string holding the YAML file, %s", got)
		}
		if fe.Field != "" {
			return nil, fe.Field, fmt.Errorf("%v; send {\"content\": \"<the YAML file>\"}", fe)
		}
		return nil, "", fmt.Errorf("%v; or send the YAML itself with another Content-Type", fe)
	}
	if req.Content == nil {
		return nil, "content", errors.New("content: is required: the YAML file as a string")
	}
	return []byte(*req.Content), "", nil
}

// jsonWrapped recognises {"content": "..."} sent without a JSON content type.
func jsonWrapped(body []byte) ([]byte, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil || len(m) != 1 {
		return nil, false
	}
	var s string
	if raw, ok := m["content"]; !ok || json.Unmarshal(raw, &s) != nil {
		return nil, false
	}
	return []byte(s), true
}
