package app

import (
	"errors"
	"net/http"
	"strings"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/records"
)

// maxBodyBytes bounds API request bodies.
const maxBodyBytes = 1 << 20

// fieldError is a 400 that names the offending field.
type fieldError = pipeline.FieldError

// readBody reads a bounded request body; a body over the limit is a 413.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	return pipeline.ReadBody(w, r, maxBodyBytes)
}

// decodeStrict decodes JSON into v (pipeline.DecodeStrict): want is what
// the route takes, said when the body is empty.
func decodeStrict(data []byte, v any, prefix, want string) error {
	return pipeline.DecodeStrict(data, v, prefix, want)
}

func join(prefix, field string) string { return pipeline.JoinField(prefix, field) }

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
