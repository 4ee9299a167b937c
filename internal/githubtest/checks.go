package githubtest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// CheckRun is a check run as it stands after every update the App made.
type CheckRun struct {
	ID                     int64
	Name, HeadSHA          string
	Status, Conclusion     string
	DetailsURL, ExternalID string
	Title, Summary, Text   string
	Actions                []CheckRunAction
	// Annotations are every annotation the App wrote: as on GitHub, those
	// of each update are added to the run's, never replace them.
	Annotations            []CheckRunAnnotation
	StartedAt, CompletedAt time.Time
	Updates                int // PATCHes after the create
	// AppSlug is the App that made the run when it is not the App under
	// test (github-actions, another App): it shows as that App's run.
	AppSlug string
}

// CheckRunAction is a button on a check run (requested_action).
type CheckRunAction struct {
	Label, Description, Identifier string
}

// CheckRunAnnotation is one annotation of a check run's output.
type CheckRunAnnotation struct {
	Path            string `json:"path"`
	StartLine       int    `json:"start_line"`
	EndLine         int    `json:"end_line"`
	AnnotationLevel string `json:"annotation_level"`
	Title           string `json:"title"`
	Message         string `json:"message"`
}

// checkRunInput is the create and update body; pointers tell "absent" from "empty".
type checkRunInput struct {
	Name        *string          `json:"name"`
	HeadSHA     *string          `json:"head_sha"`
	Status      *string          `json:"status"`
	Conclusion  *string          `json:"conclusion"`
	DetailsURL  *string          `json:"details_url"`
	ExternalID  *string          `json:"external_id"`
	StartedAt   *string          `json:"started_at"`
	CompletedAt *string          `json:"completed_at"`
	Output      *json.RawMessage `json:"output"`
	Actions     []CheckRunAction `json:"actions"`
}

func (s *Server) checkHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"POST /repos/{owner}/{repo}/check-runs":                 s.createCheckRun,
		"PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}": s.updateCheckRun,
		"GET /repos/{owner}/{repo}/check-runs/{check_run_id}":   s.getCheckRun,
		"GET /repos/{owner}/{repo}/commits/{ref}/check-runs":    s.listCheckRuns,
	}
}

func (s *Server) createCheckRun(w http.ResponseWriter, r *http.Request, p map[string]string) {
	var in checkRunInput
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	cr := &CheckRun{ID: s.newIDLocked(), Status: "queued", StartedAt: s.nowLocked()}
	s.applyCheckRunLocked(cr, in)
	repo.checkRuns[cr.ID] = cr
	repo.checkOrder = append(repo.checkOrder, cr.ID)
	writeJSON(w, http.StatusCreated, s.checkRunJSON(repo, cr))
}

func (s *Server) updateCheckRun(w http.ResponseWriter, r *http.Request, p map[string]string) {
	var in checkRunInput
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	cr, ok := repo.checkRuns[atoi64(p["check_run_id"])]
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	if id := checkRunAppID(cr); id != AppID {
		// As GitHub: only the App that made a run may change it.
		writeError(w, http.StatusForbidden, "Invalid app_id `"+strconv.FormatInt(AppID, 10)+
			"` - check run can only be modified by the GitHub App that created it.")
		return
	}
	s.applyCheckRunLocked(cr, in)
	cr.Updates++
	writeJSON(w, http.StatusOK, s.checkRunJSON(repo, cr))
}

// applyCheckRunLocked merges a body into a check run. As on GitHub, a conclusion (or a
// completed_at) completes the run.
func (s *Server) applyCheckRunLocked(cr *CheckRun, in checkRunInput) {
	setIf(&cr.Name, in.Name)
	setIf(&cr.HeadSHA, in.HeadSHA)
	setIf(&cr.Status, in.Status)
	setIf(&cr.Conclusion, in.Conclusion)
	setIf(&cr.DetailsURL, in.DetailsURL)
	setIf(&cr.ExternalID, in.ExternalID)
	if in.StartedAt != nil {
		cr.StartedAt, _ = parseTime(*in.StartedAt)
	}
	if in.CompletedAt != nil {
		cr.CompletedAt, _ = parseTime(*in.CompletedAt)
		cr.Status = "completed"
	}
	if in.Conclusion != nil {
		cr.Status = "completed"
	}
	if cr.Status == "completed" && cr.CompletedAt.IsZero() {
		cr.CompletedAt = s.nowLocked()
	}
	if in.Output != nil {
		var out struct {
			Title, Summary, Text *string
			Annotations          []CheckRunAnnotation
		}
		_ = json.Unmarshal(*in.Output, &out)
		setIf(&cr.Title, out.Title)
		setIf(&cr.Summary, out.Summary)
		setIf(&cr.Text, out.Text)
		cr.Annotations = append(cr.Annotations, out.Annotations...)
	}
	if in.Actions != nil {
		cr.Actions = append([]CheckRunAction(nil), in.Actions...)
	}
}

func (s *Server) getCheckRun(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	cr, ok := repo.checkRuns[atoi64(p["check_run_id"])]
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, s.checkRunJSON(repo, cr))
}

func (s *Server) listCheckRuns(w http.ResponseWriter, r *http.Request, p map[string]string) {
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	sha, ok := repo.git.resolve(p["ref"])
	if !ok {
		sha = p["ref"]
	}
	// filter=latest (the default) shows only the newest run of each name,
	// among those app_id keeps.
	seen := map[string]bool{}
	list := []map[string]any{}
	for i := len(repo.checkOrder) - 1; i >= 0; i-- {
		cr := repo.checkRuns[repo.checkOrder[i]]
		if cr.HeadSHA != sha || !keep(q.Get("check_name"), cr.Name) || !keep(q.Get("status"), cr.Status) ||
			!keep(q.Get("app_id"), strconv.FormatInt(checkRunAppID(cr), 10)) {
			continue
		}
		if q.Get("filter") != "all" && seen[cr.Name] {
			continue
		}
		seen[cr.Name] = true
		list = append(list, s.checkRunJSON(repo, cr))
	}
	total := len(list)
	writeJSON(w, http.StatusOK, map[string]any{"total_count": total, "check_runs": paginate(w, r, list)})
}

func (s *Server) checkRunJSON(repo *repoState, cr *CheckRun) map[string]any {
	var conclusion any
	if cr.Conclusion != "" {
		conclusion = cr.Conclusion
	}
	actions := []map[string]any{}
	for _, a := range cr.Actions {
		actions = append(actions, map[string]any{"label": a.Label, "description": a.Description, "identifier": a.Identifier})
	}
	return map[string]any{
		"id": cr.ID, "node_id": "CR_" + strconv.FormatInt(cr.ID, 10), "name": cr.Name, "head_sha": cr.HeadSHA,
		"status": cr.Status, "conclusion": conclusion, "details_url": cr.DetailsURL, "external_id": cr.ExternalID,
		"started_at": timeJSON(cr.StartedAt), "completed_at": timeJSON(cr.CompletedAt),
		"output": map[string]any{
			"title": cr.Title, "summary": cr.Summary, "text": cr.Text, "annotations_count": len(cr.Annotations),
			"annotations_url": s.apiURL("repos/%s/check-runs/%d/annotations", repo.fullName(), cr.ID),
		},
		"url":      s.apiURL("repos/%s/check-runs/%d", repo.fullName(), cr.ID),
		"html_url": htmlURL("%s/runs/%d", repo.fullName(), cr.ID),
		"app":      s.checkRunAppJSON(cr), "pull_requests": []any{}, "actions": actions,
		"check_suite": map[string]any{"id": cr.ID + 1},
	}
}

// checkRunAppID is the id of the App that made cr.
func checkRunAppID(cr *CheckRun) int64 {
	if cr.AppSlug != "" && cr.AppSlug != AppSlug {
		return AppID + 1 + int64(len(cr.AppSlug))
	}
	return AppID
}

func (s *Server) checkRunAppJSON(cr *CheckRun) map[string]any {
	app := s.appJSON()
	if id := checkRunAppID(cr); id != AppID {
		app["id"], app["slug"], app["name"] = id, cr.AppSlug, cr.AppSlug
		app["node_id"], app["html_url"] = "A_"+cr.AppSlug, htmlURL("apps/%s", cr.AppSlug)
	}
	return app
}

// CheckRuns returns repo's check runs in the order they were created, each as its latest
// update left it.
func (s *Server) CheckRuns(repo string) []CheckRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.repoLocked(repo)
	var out []CheckRun
	for _, id := range rs.checkOrder {
		c := *rs.checkRuns[id]
		c.Actions = append([]CheckRunAction(nil), c.Actions...)
		c.Annotations = append([]CheckRunAnnotation(nil), c.Annotations...)
		out = append(out, c)
	}
	return out
}
