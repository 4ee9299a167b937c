package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// FieldError is a 400 that names the offending field.
type FieldError struct {
	Field, Message string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// SizeText is n bytes as README names the limits: "1 MiB", "64 KiB".
func SizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ReadBody reads a request body of at most limit bytes. It answers the
// request itself and returns false when it cannot: 413 naming the limit
// for a body over it, 400 for a body cut short (the client went away, or
// sent less than its Content-Length), which is the request's fault, not
// its size.
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		WriteError(w, http.StatusRequestEntityTooLarge, "", "request body larger than "+SizeText(limit))
		return nil, false
	case err != nil:
		WriteError(w, http.StatusBadRequest, "", "could not read the request body: "+err.Error())
		return nil, false
	}
	return body, true
}

// DecodeBody reads a request body of at most limit bytes and decodes it
// strictly into v (DecodeStrict); it answers the request itself and
// returns false on a problem. want says what the route takes, for the
// answer to an empty body.
func DecodeBody(w http.ResponseWriter, r *http.Request, v any, limit int64, want string) bool {
	body, ok := ReadBody(w, r, limit)
	if !ok {
		return false
	}
	if err := DecodeStrict(body, v, "", want); err != nil {
		var fe *FieldError
		errors.As(err, &fe)
		WriteError(w, http.StatusBadRequest, fe.Field, fe.Error())
		return false
	}
	return true
}

// DecodeStrict decodes JSON into v. Unknown fields, wrong types, trailing
// data and syntax errors become a *FieldError naming the field (under
// prefix) or the offset; an empty body says it is empty and what the route
// wants (a JSON object when want is ""), rather than Go's bare "EOF".
func DecodeStrict(data []byte, v any, prefix, want string) error {
	if want == "" {
		want = "a JSON object"
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return &FieldError{Message: "the body is empty: expected " + want}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonFieldError(err, prefix, want)
	}
	if dec.More() {
		return &FieldError{Message: "unexpected data after the JSON value"}
	}
	return nil
}

func jsonFieldError(err error, prefix, want string) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		if typeErr.Field == "" && prefix == "" {
			return &FieldError{Message: fmt.Sprintf("expected %s, got JSON %s", want, typeErr.Value)}
		}
		return &FieldError{Field: JoinField(prefix, typeErr.Field),
			Message: fmt.Sprintf("expected %s, got JSON %s", typeErr.Type, typeErr.Value)}
	case errors.As(err, &syntaxErr):
		return &FieldError{Message: fmt.Sprintf("not valid JSON at byte %d: %v", syntaxErr.Offset, syntaxErr)}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &FieldError{Message: "the body is cut short: expected " + want}
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return &FieldError{Field: JoinField(prefix, strings.Trim(name, `"`)), Message: "unknown field"}
	}
	return &FieldError{Message: err.Error()}
}

// JoinField is the path of field under prefix: facts[0].phase.
func JoinField(prefix, field string) string {
	switch {
	case prefix == "":
		return field
	case field == "":
		return prefix
	}
	return prefix + "." + field
}
