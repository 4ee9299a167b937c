package githubtest

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// Dispatch is one workflow_dispatch the App asked for.
type Dispatch struct {
	Workflow string // the workflow_id parameter: an id or a file name
	Ref      string
	Inputs   map[string]any
	RunID    int64 // the run created for it
}

// GateReview is one answer the App gave to a deployment_protection_rule request.
type GateReview struct {
	RunID       int64
	Environment string
	State       string // approved, rejected; empty for a comment only
	Comment     string
}

func (s *Server) actionHandlers() map[string]HandlerFunc {
	const run = "/repos/{owner}/{repo}/actions/runs/{run_id}"
	return map[string]HandlerFunc{
		"POST " + run + "/rerun-failed-jobs":                                    s.rerun(true),
		"POST " + run + "/rerun":                                                s.rerun(false),
		"GET " + run:                                                            s.getRun,
		"GET " + run + "/attempts/{attempt_number}":                             s.getRun,
		"GET " + run + "/jobs":                                                  s.listJobs,
		"GET " + run + "/attempts/{attempt_number}/jobs":                        s.listJobs,
		"POST " + run + "/deployment_protection_rule":                           s.reviewGate,
		"GET /repos/{owner}/{repo}/actions/runs":                                s.listRuns,
		"GET /repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs":        s.listRuns,
		"POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches": s.dispatch,
	}
}

func (s *Server) rerun(onlyFailed bool) HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p map[string]string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		rs := s.runLocked(s.repoFor(p), atoi64(p["run_id"]))
		if why := s.rerunLocked(rs, onlyFailed); why != "" {
			writeError(w, http.StatusForbidden, why)
			return
		}
		writeJSON(w, http.StatusCreated, map[string]any{})
	}
}

// attemptLocked is the run as attempt attempt_number (or the latest) shows it.
func (s *Server) attemptLocked(w http.ResponseWriter, p map[string]string) (*repoState, *runState, WorkflowRun, bool) {
	repo := s.repoFor(p)
	rs := s.runLocked(repo, atoi64(p["run_id"]))
	snap := rs.snapshot()
	if n, ok := p["attempt_number"]; ok {
		i, _ := strconv.Atoi(n)
		if i < 1 || i > len(rs.attempts) {
			writeError(w, http.StatusNotFound, "Not Found")
			return repo, rs, snap, false
		}
		a := rs.attempts[i-1]
		snap.Status, snap.Conclusion, snap.RunAttempt, snap.Jobs = a.status, a.conclusion, i, a.jobs
	}
	return repo, rs, snap, true
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if repo, _, snap, ok := s.attemptLocked(w, p); ok {
		writeJSON(w, http.StatusOK, s.runJSON(repo, snap))
	}
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, rs, snap, ok := s.attemptLocked(w, p)
	if !ok {
		return
	}
	jobs := snap.Jobs
	if _, byAttempt := p["attempt_number"]; !byAttempt && r.URL.Query().Get("filter") == "all" {
		// Jobs a failed-jobs re-run kept are the same jobs, listed once.
		jobs = nil
		seen := map[int64]bool{}
		for _, a := range rs.attempts {
			for _, j := range a.jobs {
				if !seen[j.ID] {
					seen[j.ID] = true
					jobs = append(jobs, j)
				}
			}
		}
	}
	list := []map[string]any{}
	for _, j := range jobs {
		list = append(list, s.jobJSON(repo, snap, j))
	}
	total := len(list)
	writeJSON(w, http.StatusOK, map[string]any{"total_count": total, "jobs": paginate(w, r, list)})
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request, p map[string]string) {
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	var ids []int64
	for id := range repo.runs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] > ids[j] })
	list := []map[string]any{}
	for _, id := range ids {
		run := repo.runs[id].snapshot()
		if wf, ok := p["workflow_id"]; ok && !matchesWorkflow(run, wf) {
			continue
		}
		if !keep(q.Get("branch"), run.HeadBranch) || !keep(q.Get("event"), run.Event) ||
			!keep(q.Get("head_sha"), run.HeadSHA) || !(keep(q.Get("status"), run.Status) || q.Get("status") == run.Conclusion) {
			continue
		}
		list = append(list, s.runJSON(repo, run))
	}
	total := len(list)
	writeJSON(w, http.StatusOK, map[string]any{"total_count": total, "workflow_runs": paginate(w, r, list)})
}

// keep is a list filter: an empty filter keeps everything.
func keep(filter, value string) bool { return filter == "" || filter == value }

func (s *Server) dispatch(w http.ResponseWriter, r *http.Request, p map[string]string) {
	var in struct {
		Ref              string         `json:"ref"`
		Inputs           map[string]any `json:"inputs"`
		ReturnRunDetails bool           `json:"return_run_details"`
	}
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	wf := p["workflow_id"]
	name := strings.TrimSuffix(strings.TrimSuffix(wf, ".yml"), ".yaml")
	sha, _ := repo.git.resolve(in.Ref)
	rs := s.addRunLocked(repo, WorkflowRun{
		Name: name, Path: ".github/workflows/" + wf, Event: "workflow_dispatch",
		HeadBranch: headBranch(in.Ref), HeadSHA: sha, Status: "queued", Inputs: in.Inputs,
		DisplayTitle: repo.runNameLocked(wf, in.Inputs),
	})
	repo.dispatches = append(repo.dispatches, Dispatch{Workflow: wf, Ref: in.Ref, Inputs: in.Inputs, RunID: rs.ID})
	if !in.ReturnRunDetails || repo.noDetails {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"workflow_run_id": rs.ID,
		"run_url":         s.apiURL("repos/%s/actions/runs/%d", repo.fullName(), rs.ID),
		"html_url":        htmlURL("%s/actions/runs/%d", repo.fullName(), rs.ID),
	})
}

// IgnoreRunDetails makes the dispatches of repo answer 204 without the
// run's details even when return_run_details asks for them, as a GitHub
// that does not know the parameter does.
func (s *Server) IgnoreRunDetails(repo string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repoLocked(repo).noDetails = true
}

// Dispatches returns the workflow dispatches made on repo, in order.
func (s *Server) Dispatches(repo string) []Dispatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Dispatch(nil), s.repoLocked(repo).dispatches...)
}

func (s *Server) reviewGate(w http.ResponseWriter, r *http.Request, p map[string]string) {
	var in struct {
		EnvironmentName string `json:"environment_name"`
		State, Comment  string
	}
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	repo.gateReviews = append(repo.gateReviews, GateReview{
		RunID: atoi64(p["run_id"]), Environment: in.EnvironmentName, State: in.State, Comment: in.Comment,
	})
	w.WriteHeader(http.StatusNoContent)
}

// GateReviews returns the answers the App gave to deployment protection rules on repo.
func (s *Server) GateReviews(repo string) []GateReview {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]GateReview(nil), s.repoLocked(repo).gateReviews...)
}

func (s *Server) runJSON(repo *repoState, run WorkflowRun) map[string]any {
	base := s.apiURL("repos/%s/actions/runs/%d", repo.fullName(), run.ID)
	var conclusion any
	if run.Conclusion != "" {
		conclusion = run.Conclusion
	}
	return map[string]any{
		"id": run.ID, "node_id": "WFR_" + strconv.FormatInt(run.ID, 10), "name": run.Name,
		"display_title": orDefault(run.DisplayTitle, run.Name), "path": run.Path, "event": run.Event,
		"head_branch": run.HeadBranch, "head_sha": run.HeadSHA, "run_number": run.ID % 1000,
		"status": run.Status, "conclusion": conclusion, "run_attempt": run.RunAttempt,
		"workflow_id": workflowID(run.Path), "check_suite_id": run.ID + 1,
		"url": base, "html_url": htmlURL("%s/actions/runs/%d", repo.fullName(), run.ID),
		"jobs_url": base + "/jobs", "logs_url": base + "/logs", "rerun_url": base + "/rerun",
		"cancel_url": base + "/cancel", "artifacts_url": base + "/artifacts",
		"check_suite_url": s.apiURL("repos/%s/check-suites/%d", repo.fullName(), run.ID+1),
		"workflow_url":    s.apiURL("repos/%s/actions/workflows/%d", repo.fullName(), workflowID(run.Path)),
		"created_at":      timeJSON(run.CreatedAt), "updated_at": timeJSON(run.CreatedAt),
		"run_started_at": timeJSON(run.CreatedAt), "pull_requests": []any{},
		"repository": s.repoJSON(repo), "head_repository": s.repoJSON(repo),
		"actor": s.userJSON(repo.owner), "triggering_actor": s.userJSON(repo.owner),
	}
}

func (s *Server) jobJSON(repo *repoState, run WorkflowRun, j Job) map[string]any {
	var conclusion any
	if j.Conclusion != "" {
		conclusion = j.Conclusion
	}
	return map[string]any{
		"id": j.ID, "run_id": run.ID, "run_attempt": j.RunAttempt, "node_id": "J_" + strconv.FormatInt(j.ID, 10),
		"name": j.Name, "workflow_name": run.Name, "status": j.Status, "conclusion": conclusion,
		"head_sha": run.HeadSHA, "head_branch": run.HeadBranch, "labels": nonNil(j.Labels), "steps": []any{},
		"url":           s.apiURL("repos/%s/actions/jobs/%d", repo.fullName(), j.ID),
		"html_url":      htmlURL("%s/actions/runs/%d/job/%d", repo.fullName(), run.ID, j.ID),
		"run_url":       s.apiURL("repos/%s/actions/runs/%d", repo.fullName(), run.ID),
		"check_run_url": s.apiURL("repos/%s/check-runs/%d", repo.fullName(), j.ID),
		"created_at":    timeJSON(run.CreatedAt), "started_at": timeJSON(run.CreatedAt), "completed_at": nil,
		"runner_id": nil, "runner_name": nil, "runner_group_id": nil, "runner_group_name": nil,
	}
}
