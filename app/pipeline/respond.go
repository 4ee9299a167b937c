package pipeline

import (
	"encoding/json"
	"net/http"
)

// APIError is the body of every 4xx/5xx of ripcord's API: the message says
// what is wrong and, for bad input, Field names the offending field.
type APIError struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

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
