package githubtest

// AddCheckRun stores a check run as another App (a CI system, an earlier
// ripcord) would have made it, for tests that read check runs back.
func (s *Server) AddCheckRun(repo string, cr CheckRun) CheckRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repoLocked(repo)
	cr.ID = s.newIDLocked()
	if cr.Status == "" {
		cr.Status = "completed"
	}
	if cr.StartedAt.IsZero() {
		cr.StartedAt = s.nowLocked()
	}
	c := cr
	r.checkRuns[c.ID] = &c
	r.checkOrder = append(r.checkOrder, c.ID)
	return c
}

// EditCheckRun changes check run id of repo as another writer would (a
// job of the App the test does not drive), without counting an update.
func (s *Server) EditCheckRun(repo string, id int64, edit func(*CheckRun)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cr, ok := s.repoLocked(repo).checkRuns[id]; ok {
		edit(cr)
	}
}
