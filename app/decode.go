package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/ripcord/ripcord/records"
)

// maxBodyBytes bounds API request bodies.
const maxBodyBytes = 1 << 20

// fieldError is a 400 that names the offending field.
type fieldError struct {
	Field, Message string
}

func (e *fieldError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// readBody reads a bounded request body; a body over the limit is a 413.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, "", "request body larger than 1 MiB")
		return nil, false
	case err != nil:
		// A body cut short (the client went away, or sent less than its
		// Content-Length) is the request's fault, not its size.
		writeError(w, http.StatusBadRequest, "", "could not read the request body: "+err.Error())
		return nil, false
	}
	return body, true
}

// decodeStrict decodes JSON into v: unknown fields, wrong types, trailing
// data and syntax errors become a fieldError naming the field (or offset).
func decodeStrict(data []byte, v any, prefix string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonFieldError(err, prefix)
	}
	if dec.More() {
		return &fieldError{Message: "unexpected data after the JSON value"}
	}
	return nil
}

func jsonFieldError(err error, prefix string) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		return &fieldError{Field: join(prefix, typeErr.Field),
			Message: fmt.Sprintf("expected %s, got JSON %s", typeErr.Type, typeErr.Value)}
	case errors.As(err, &syntaxErr):
		return &fieldError{Message: fmt.Sprintf("not valid JSON at byte %d: %v", syntaxErr.Offset, syntaxErr)}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &fieldError{Message: "the body is empty or cut short: expected a JSON object"}
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return &fieldError{Field: join(prefix, strings.Trim(name, `"`)), Message: "unknown field"}
	}
	return &fieldError{Message: err.Error()}
}

func join(prefix, field string) string {
	switch {
	case prefix == "":
		return field
	case field == "":
		return prefix
	}
	return prefix + "." + field
}

// writeFieldError answers 400 with the field named.
func writeFieldError(w http.ResponseWriter, err error) {
	var fe *fieldError
	if errors.As(err, &fe) {
		writeError(w, http.StatusBadRequest, fe.Field, fe.Error())
		return
	}
	var rfe *records.FieldError // Validate joins several; errors.As finds the first
	if errors.As(err, &rfe) {
		writeError(w, http.StatusBadRequest, rfe.Field, strings.ReplaceAll(err.Error(), "\n", "; "))
		return
	}
	writeError(w, http.StatusBadRequest, "", err.Error())
}
