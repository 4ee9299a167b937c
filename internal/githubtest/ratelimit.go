package githubtest

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
)

// RefuseForRateLimit has s refuse every request to route with a 403, as
// GitHub does when the App's rate limit is spent, with the headers given
// (name, value, …), until lift is set; then route is answered as before.
// refused counts the refusals.
func (s *Server) RefuseForRateLimit(route string, lift *atomic.Bool, refused *atomic.Int32, header ...string) {
	s.RefuseForRateLimitWhere(route, nil, lift, refused, header...)
}

// RefuseForRateLimitWhere is RefuseForRateLimit for the requests to route
// that pick chooses by the route's parameters (nil: all of them); the
// others are answered as before: a gate's read of one file, say, and not
// the config's.
func (s *Server) RefuseForRateLimitWhere(route string, pick func(params map[string]string) bool, lift *atomic.Bool, refused *atomic.Int32, header ...string) {
	answer := s.Default(route)
	s.Handle(route, func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		if lift.Load() || (pick != nil && !pick(p)) {
			answer(w, r, p)
			return
		}
		refused.Add(1)
		w.Header().Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(http.StatusForbidden)
		body, _ := json.Marshal(map[string]string{"message": "API rate limit exceeded for installation."})
		_, _ = w.Write(body)
	})
}
