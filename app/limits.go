package app

import (
	"fmt"
	"net/http"

	"github.com/ripcord/ripcord/app/pipeline"
)

// bodyLimits are the routes whose body limit is not maxBodyBytes. They are
// the limits the handlers enforce as they read; limitBodies enforces them
// before, from the Content-Length. A limit of 0 leaves the route to its
// handler: the webhook intake refuses a payload over GitHub's cap itself,
// and counts the refusal in its metrics.
var bodyLimits = map[string]int64{
	"POST /api/github/hook": 0,
	// rollbackflow's maxBody: a rollback request is a few short strings.
	"POST /api/v1/rollbacks": 64 << 10,
}

// smallestBodyLimit lets most requests pass without looking up their route.
const smallestBodyLimit = 64 << 10

// limitBodies answers 413, naming the limit, a request whose Content-Length
// is over its route's limit, before its handler reads a byte or checks its
// credentials: the client learns the limit at once instead of sending the
// body first, and no handler is left to fail in its own words (one that
// cut the body short named a JSON syntax error instead). A body of unknown
// length is still bounded by its handler as it reads.
func (s *Server) limitBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > smallestBodyLimit {
			_, pattern := s.mux.Handler(r)
			limit, ok := bodyLimits[pattern]
			if !ok {
				limit = maxBodyBytes
			}
			if limit > 0 && r.ContentLength > limit {
				// Go closes the connection rather than read a large unread body.
				writeError(w, http.StatusRequestEntityTooLarge, "",
					fmt.Sprintf("request body larger than %s (Content-Length %d)", pipeline.SizeText(limit), r.ContentLength))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
