package githubtest

import (
	"net/http"
	"regexp"
	"strconv"
	"time"
)

// Deployment is a GitHub deployment with its statuses, oldest first.
type Deployment struct {
	ID                    int64
	Ref, SHA, Task        string
	Environment           string
	Description           string
	Payload               any
	ProductionEnvironment bool
	TransientEnvironment  bool
	Statuses              []DeploymentStatus
	CreatedAt             time.Time
}

// DeploymentStatus is one status of a deployment.
type DeploymentStatus struct {
	ID                              int64
	State, Description, Environment string
	EnvironmentURL, LogURL          string
	CreatedAt                       time.Time
}

// CommitStatus is one commit status (POST /repos/{owner}/{repo}/statuses/{sha}).
type CommitStatus struct {
	SHA, State, Context, Description, TargetURL string
}

func (s *Server) deploymentHandlers() map[string]HandlerFunc {
	const one = "/repos/{owner}/{repo}/deployments/{deployment_id}"
	return map[string]HandlerFunc{
		"POST /repos/{owner}/{repo}/deployments":    s.createDeployment,
		"GET /repos/{owner}/{repo}/deployments":     s.listDeployments,
		"GET " + one:                                s.getDeployment,
		"POST " + one + "/statuses":                 s.createDeploymentStatus,
		"GET " + one + "/statuses":                  s.listDeploymentStatuses,
		"POST /repos/{owner}/{repo}/statuses/{sha}": s.createCommitStatus,
	}
}

var fullSHA = regexp.MustCompile(`^[0-9a-f]{40}$`)

func (s *Server) createDeployment(w http.ResponseWriter, r *http.Request, p map[string]string) {
	in := struct {
		Ref, Task, Environment, Description string
		Payload                             any
		ProductionEnvironment               *bool `json:"production_environment"`
		TransientEnvironment                bool  `json:"transient_environment"`
	}{Task: "deploy", Environment: "production"}
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	sha, ok := repo.git.resolve(in.Ref)
	if !ok && !fullSHA.MatchString(in.Ref) {
		writeError(w, http.StatusUnprocessableEntity, "No ref found for: "+in.Ref)
		return
	}
	if !ok {
		sha = in.Ref
	}
	d := &Deployment{
		ID: s.newIDLocked(), Ref: in.Ref, SHA: sha, Task: in.Task, Environment: in.Environment,
		Description: in.Description, Payload: in.Payload, TransientEnvironment: in.TransientEnvironment,
		ProductionEnvironment: in.Environment == "production", CreatedAt: s.nowLocked(),
	}
	if in.ProductionEnvironment != nil {
		d.ProductionEnvironment = *in.ProductionEnvironment
	}
	repo.deployments[d.ID] = d
	repo.deployOrder = append(repo.deployOrder, d.ID)
	writeJSON(w, http.StatusCreated, s.deploymentJSON(repo, d))
}

func (s *Server) listDeployments(w http.ResponseWriter, r *http.Request, p map[string]string) {
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	list := []map[string]any{}
	for i := len(repo.deployOrder) - 1; i >= 0; i-- {
		d := repo.deployments[repo.deployOrder[i]]
		if keep(q.Get("sha"), d.SHA) && keep(q.Get("ref"), d.Ref) && keep(q.Get("task"), d.Task) && keep(q.Get("environment"), d.Environment) {
			list = append(list, s.deploymentJSON(repo, d))
		}
	}
	writeJSON(w, http.StatusOK, paginate(w, r, list))
}

func (s *Server) deploymentLocked(w http.ResponseWriter, p map[string]string) (*repoState, *Deployment) {
	repo := s.repoFor(p)
	d, ok := repo.deployments[atoi64(p["deployment_id"])]
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return repo, nil
	}
	return repo, d
}

func (s *Server) getDeployment(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if repo, d := s.deploymentLocked(w, p); d != nil {
		writeJSON(w, http.StatusOK, s.deploymentJSON(repo, d))
	}
}

func (s *Server) createDeploymentStatus(w http.ResponseWriter, r *http.Request, p map[string]string) {
	var in struct {
		State, Description, Environment string
		EnvironmentURL                  string `json:"environment_url"`
		LogURL                          string `json:"log_url"`
		TargetURL                       string `json:"target_url"`
	}
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, d := s.deploymentLocked(w, p)
	if d == nil {
		return
	}
	st := DeploymentStatus{
		ID: s.newIDLocked(), State: in.State, Description: in.Description,
		Environment: orDefault(in.Environment, d.Environment), EnvironmentURL: in.EnvironmentURL,
		LogURL: orDefault(in.LogURL, in.TargetURL), CreatedAt: s.nowLocked(),
	}
	d.Statuses = append(d.Statuses, st)
	writeJSON(w, http.StatusCreated, s.deploymentStatusJSON(repo, d, st))
}

func (s *Server) listDeploymentStatuses(w http.ResponseWriter, r *http.Request, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repo, d := s.deploymentLocked(w, p)
	if d == nil {
		return
	}
	list := []map[string]any{}
	for i := len(d.Statuses) - 1; i >= 0; i-- {
		list = append(list, s.deploymentStatusJSON(repo, d, d.Statuses[i]))
	}
	writeJSON(w, http.StatusOK, paginate(w, r, list))
}

func (s *Server) createCommitStatus(w http.ResponseWriter, r *http.Request, p map[string]string) {
	var in struct {
		State, Description, Context string
		TargetURL                   string `json:"target_url"`
	}
	if err := decodeBody(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := s.repoFor(p)
	st := CommitStatus{SHA: p["sha"], State: in.State, Context: orDefault(in.Context, "default"), Description: in.Description, TargetURL: in.TargetURL}
	repo.statuses = append(repo.statuses, st)
	id := s.newIDLocked()
	writeJSON(w, http.StatusCreated, map[string]any{
		"id": id, "node_id": "SC_" + strconv.FormatInt(id, 10), "state": st.State, "context": st.Context,
		"description": st.Description, "target_url": st.TargetURL, "creator": s.userJSON(BotLogin),
		"url":        s.apiURL("repos/%s/statuses/%s", repo.fullName(), st.SHA),
		"avatar_url": nil, "created_at": timeJSON(s.nowLocked()), "updated_at": timeJSON(s.nowLocked()),
	})
}

func (s *Server) deploymentJSON(repo *repoState, d *Deployment) map[string]any {
	payload := d.Payload
	if payload == nil {
		payload = map[string]any{}
	}
	return map[string]any{
		"id": d.ID, "node_id": "DE_" + strconv.FormatInt(d.ID, 10), "sha": d.SHA, "ref": d.Ref, "task": d.Task,
		"payload": payload, "environment": d.Environment, "original_environment": d.Environment,
		"description": d.Description, "creator": s.userJSON(BotLogin),
		"transient_environment": d.TransientEnvironment, "production_environment": d.ProductionEnvironment,
		"created_at": timeJSON(d.CreatedAt), "updated_at": timeJSON(d.CreatedAt),
		"url":            s.apiURL("repos/%s/deployments/%d", repo.fullName(), d.ID),
		"statuses_url":   s.apiURL("repos/%s/deployments/%d/statuses", repo.fullName(), d.ID),
		"repository_url": s.apiURL("repos/%s", repo.fullName()),
	}
}

func (s *Server) deploymentStatusJSON(repo *repoState, d *Deployment, st DeploymentStatus) map[string]any {
	return map[string]any{
		"id": st.ID, "node_id": "DES_" + strconv.FormatInt(st.ID, 10), "state": st.State,
		"description": st.Description, "environment": st.Environment, "creator": s.userJSON(BotLogin),
		"environment_url": st.EnvironmentURL, "log_url": st.LogURL, "target_url": st.LogURL,
		"created_at": timeJSON(st.CreatedAt), "updated_at": timeJSON(st.CreatedAt),
		"url":            s.apiURL("repos/%s/deployments/%d/statuses/%d", repo.fullName(), d.ID, st.ID),
		"deployment_url": s.apiURL("repos/%s/deployments/%d", repo.fullName(), d.ID),
		"repository_url": s.apiURL("repos/%s", repo.fullName()),
	}
}

// Deployments returns repo's deployments, oldest first, with their statuses.
func (s *Server) Deployments(repo string) []Deployment {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.repoLocked(repo)
	var out []Deployment
	for _, id := range rs.deployOrder {
		d := *rs.deployments[id]
		d.Statuses = append([]DeploymentStatus(nil), d.Statuses...)
		out = append(out, d)
	}
	return out
}

// CommitStatuses returns the commit statuses set on repo, in order.
func (s *Server) CommitStatuses(repo string) []CommitStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]CommitStatus(nil), s.repoLocked(repo).statuses...)
}
