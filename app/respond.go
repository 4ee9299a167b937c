package app

import (
	"net/http"

	"github.com/ripcord/ripcord/app/pipeline"
)

// apiError is the API's error body (pipeline.APIError).
type apiError = pipeline.APIError

func writeJSON(w http.ResponseWriter, status int, v any) { pipeline.WriteJSON(w, status, v) }

func writeError(w http.ResponseWriter, status int, field, msg string) {
	pipeline.WriteError(w, status, field, msg)
}
