package app

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/secret"
)

// API limits.
const (
	defaultListLimit = 50
	maxListLimit     = 1000
)

// requireAPIToken guards /api/v1 for people and the CLI.
func (s *Server) requireAPIToken(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.APIToken == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ripcord"`)
			writeError(w, http.StatusUnauthorized, "", "the API is closed: the server has no api_token (set RIPCORD_API_TOKEN)")
			return
		}
		got, ok := bearer(r)
		if !ok || !secret.Equal(got, s.cfg.APIToken) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ripcord"`)
			writeError(w, http.StatusUnauthorized, "", "missing or wrong bearer token: send Authorization: Bearer <api_token>")
			return
		}
		next(w, r)
	}
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return strings.TrimSpace(token), true
}

// knownParams is pipeline.KnownParams.
func knownParams(w http.ResponseWriter, r *http.Request, known ...string) bool {
	return pipeline.KnownParams(w, r, known...)
}

// listLimit reads ?limit=, 400 naming the field when it is not 1..1000.
func listLimit(w http.ResponseWriter, r *http.Request) (int, bool) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return defaultListLimit, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxListLimit {
		writeError(w, http.StatusBadRequest, "limit", "limit must be a whole number from 1 to 1000")
		return 0, false
	}
	return n, true
}

func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request) {
	if !knownParams(w, r, "limit") {
		return
	}
	limit, ok := listLimit(w, r)
	if !ok {
		return
	}
	ds, err := listDeliveries(r.Context(), s.db.Read, limit)
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deliveries": ds})
}

func (s *Server) getDelivery(w http.ResponseWriter, r *http.Request) {
	d, err := getDelivery(r.Context(), s.db.Dialect, s.db.Read, r.PathValue("id"), false)
	if errors.Is(err, errNotFound) {
		writeError(w, http.StatusNotFound, "id", "no delivery with id "+strconv.Quote(r.PathValue("id")))
		return
	}
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

func (s *Server) internalError(w http.ResponseWriter, r *http.Request, err error) {
	if s.health.failed(err) {
		// The outage is logged once (dbhealth.go), not once per request.
		s.log.Debug("request failed: the database is unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusServiceUnavailable, "", "the database is unavailable; nothing was stored, retry later")
		return
	}
	s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	writeError(w, http.StatusInternalServerError, "", "internal error; the server log has the details")
}
