package githubtest

import (
	"path"
	"strconv"
	"strings"
	"time"
)

// WorkflowRun is a GitHub Actions workflow run in the fake; Jobs are those of its latest
// attempt.
type WorkflowRun struct {
	ID         int64
	Name       string // the workflow's name; default "deploy"
	Path       string // default .github/workflows/deploy.yml
	Event      string // default push
	HeadBranch string // default main
	HeadSHA    string
	Status     string // queued, in_progress, completed (default)
	Conclusion string // for completed runs; default failure
	RunAttempt int
	Inputs     map[string]any // of a workflow_dispatch
	Jobs       []Job
	CreatedAt  time.Time

	// DisplayTitle is the run's run-name (runname.go); default Name.
	DisplayTitle string
}

// Job is one job of one attempt of a run.
type Job struct {
	ID         int64
	Name       string
	Status     string
	Conclusion string
	RunAttempt int
	Labels     []string // runner labels
}

// attempt is a run as it was at one attempt; the run's fields are its latest attempt.
type attempt struct {
	status, conclusion string
	jobs               []Job
	startedAt          time.Time
}

type runState struct {
	WorkflowRun
	attempts []attempt
}

func (r *runState) latest() *attempt { return &r.attempts[len(r.attempts)-1] }

// snapshot is the run as its latest attempt shows it.
func (r *runState) snapshot() WorkflowRun {
	out := r.WorkflowRun
	a := r.latest()
	out.Status, out.Conclusion, out.RunAttempt = a.status, a.conclusion, len(r.attempts)
	out.Jobs = append([]Job(nil), a.jobs...)
	return out
}

func (s *Server) withRunDefaultsLocked(run WorkflowRun) WorkflowRun {
	if run.ID == 0 {
		run.ID = s.newIDLocked()
	}
	run.Name = orDefault(run.Name, "deploy")
	run.Path = orDefault(run.Path, ".github/workflows/"+run.Name+".yml")
	run.Event = orDefault(run.Event, "push")
	run.HeadBranch = orDefault(run.HeadBranch, "main")
	run.Status = orDefault(run.Status, "completed")
	if run.Status == "completed" {
		run.Conclusion = orDefault(run.Conclusion, "failure")
	}
	if run.CreatedAt.IsZero() {
		run.CreatedAt = s.nowLocked()
	}
	if len(run.Jobs) == 0 {
		run.Jobs = []Job{{Name: run.Name}}
	}
	return run
}

func (s *Server) addRunLocked(repo *repoState, run WorkflowRun) *runState {
	run = s.withRunDefaultsLocked(run)
	jobs := make([]Job, len(run.Jobs))
	for i, j := range run.Jobs {
		if j.ID == 0 {
			j.ID = s.newIDLocked()
		}
		j.Status = orDefault(j.Status, run.Status)
		if j.Status == "completed" {
			j.Conclusion = orDefault(j.Conclusion, run.Conclusion)
		}
		j.RunAttempt = 1
		jobs[i] = j
	}
	rs := &runState{WorkflowRun: run, attempts: []attempt{{
		status: run.Status, conclusion: run.Conclusion, jobs: jobs, startedAt: run.CreatedAt,
	}}}
	repo.runs[run.ID] = rs
	return rs
}

// AddWorkflowRun adds a run to repo (defaults: a completed, failed "deploy" run on main
// with one job) and returns it as stored. A run the App asks about without the test
// adding it is taken to exist with these defaults: the webhook payload that named it is
// the test's source of truth.
func (s *Server) AddWorkflowRun(repo string, run WorkflowRun) WorkflowRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addRunLocked(s.repoLocked(repo), run).snapshot()
}

func (s *Server) runLocked(repo *repoState, id int64) *runState {
	if rs, ok := repo.runs[id]; ok {
		return rs
	}
	return s.addRunLocked(repo, WorkflowRun{ID: id})
}

// Run returns run id of repo as its latest attempt shows it.
func (s *Server) Run(repo string, id int64) (WorkflowRun, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs, ok := s.repoLocked(repo).runs[id]
	if !ok {
		return WorkflowRun{}, false
	}
	return rs.snapshot(), true
}

// CompleteRun finishes the latest attempt of run id: every job not yet completed, and the
// run, get conclusion — as when a re-run the App asked for ends.
func (s *Server) CompleteRun(repo string, id int64, conclusion string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.runLocked(s.repoLocked(repo), id).latest()
	a.status, a.conclusion = "completed", conclusion
	for i := range a.jobs {
		if a.jobs[i].Status != "completed" {
			a.jobs[i].Status, a.jobs[i].Conclusion = "completed", conclusion
		}
	}
}

func failed(conclusion string) bool {
	switch conclusion {
	case "failure", "cancelled", "timed_out", "startup_failure":
		return true
	}
	return false
}

// rerunLocked starts a new attempt; onlyFailed keeps the jobs that succeeded, as
// rerun-failed-jobs does. It returns why GitHub would refuse, or "".
func (s *Server) rerunLocked(rs *runState, onlyFailed bool) string {
	now := s.nowLocked()
	switch {
	case rs.latest().status != "completed":
		return "This workflow run is not completed"
	case len(rs.attempts) >= maxRunAttempts:
		return "This workflow run has reached the maximum of " + strconv.Itoa(maxRunAttempts) + " attempts"
	case now.Sub(rs.CreatedAt) > rerunWindow:
		return "Unable to re-run this workflow run because it was created over a month ago"
	}
	n := len(rs.attempts) + 1
	var jobs []Job
	for _, j := range rs.latest().jobs {
		if onlyFailed && !failed(j.Conclusion) {
			jobs = append(jobs, j)
			continue
		}
		jobs = append(jobs, Job{ID: s.newIDLocked(), Name: j.Name, Status: "queued", RunAttempt: n, Labels: j.Labels})
	}
	rs.attempts = append(rs.attempts, attempt{status: "queued", jobs: jobs, startedAt: now})
	return ""
}

// GitHub's limits on re-runs: 50 attempts per run, within 30 days of the run.
const (
	maxRunAttempts = 50
	rerunWindow    = 30 * 24 * time.Hour
)

func workflowID(workflowPath string) int64 { return loginID("workflow:" + workflowPath) }

// matchesWorkflow tells whether a workflow_id parameter (an id or a file name) names the
// run's workflow.
func matchesWorkflow(run WorkflowRun, id string) bool {
	return id == strconv.FormatInt(workflowID(run.Path), 10) || id == path.Base(run.Path) || strings.TrimPrefix(id, "/") == run.Path
}
