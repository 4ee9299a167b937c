package app

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/ripcord/ripcord/eligibility"
	"github.com/ripcord/ripcord/records"
)

// maxEligibilityWindow bounds ?window= (repository configs cap it too).
const maxEligibilityWindow = 100

// getEligibility is GET /api/v1/eligibility?app=&environment=&cluster=&image=
// [&window=N]: is this image (by digest, or a full reference) a safe rollback
// target there? Computed from the records every time, with the evidence.
// Without ?window= the window is the one every other place uses: the
// eligibility.window of the app's repository (the owner of the app and
// environment, records.Store.Owner) as last read (pipeline.RepoConfigs), or
// eligibility.DefaultWindow while none is kept.
func (s *Server) getEligibility(w http.ResponseWriter, r *http.Request) {
	if !knownParams(w, r, "app", "environment", "cluster", "image", "window") {
		return
	}
	q := r.URL.Query()
	query := eligibility.Query{App: q.Get("app"), Environment: q.Get("environment"), Cluster: q.Get("cluster"), Image: q.Get("image")}
	// In the documented order, so the field named is the same every time.
	for _, p := range []struct{ field, v string }{
		{"app", query.App}, {"environment", query.Environment}, {"cluster", query.Cluster}, {"image", query.Image},
	} {
		if strings.TrimSpace(p.v) == "" {
			writeError(w, http.StatusBadRequest, p.field, p.field+" is required")
			return
		}
	}
	if d := records.ParseImage(query.Image).Digest; d != "" && !records.ValidDigest(d) {
		writeError(w, http.StatusBadRequest, "image",
			fmt.Sprintf(`image: digest %q is not "sha256:<64 hex>" or "sha512:<128 hex>"`, d))
		return
	}
	window := eligibility.DefaultWindow
	if v := q.Get("window"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxEligibilityWindow {
			writeError(w, http.StatusBadRequest, "window", "window must be a whole number from 1 to 100")
			return
		}
		window = n
	} else {
		owner, err := s.records.Owner(r.Context(), query.App, query.Environment)
		if err != nil {
			s.internalError(w, r, err)
			return
		}
		if cfg, ok := s.repoConfigs.Get(owner); owner != "" && ok && cfg.Eligibility.Window > 0 {
			window = cfg.Eligibility.Window
		}
	}
	// The newest releases that ran: opened ones take no place in the
	// window, so however many there are they must not crowd it out.
	// ReadAhead more let the answer say why an older one does not count.
	rs, err := s.records.NewestRan(r.Context(), window+eligibility.ReadAhead,
		[]records.Target{{App: query.App, Environment: query.Environment, Cluster: query.Cluster}})
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	ans := eligibility.Check(rs, query, window)
	if !ans.Eligible {
		// A "no" says where else the image ran healthy, when it did (in
		// another environment or cluster of the app): Check explains that
		// from the app's other records (its newest records.DefaultListLimit),
		// which the query above leaves out.
		others, err := s.records.List(r.Context(), records.Filter{App: query.App})
		if err != nil {
			s.internalError(w, r, err)
			return
		}
		others = slices.DeleteFunc(others, func(o records.Record) bool {
			return o.Environment == query.Environment && o.Cluster == query.Cluster
		})
		if len(others) > 0 {
			ans = eligibility.Check(append(rs, others...), query, window)
		}
	}
	writeJSON(w, http.StatusOK, ans)
}
