package githubtest

// defaultHandlers gathers the built-in operations of every area.
func (s *Server) defaultHandlers() map[string]HandlerFunc {
	all := map[string]HandlerFunc{}
	for _, area := range []map[string]HandlerFunc{
		s.appHandlers(), s.contentHandlers(), s.gitHandlers(), s.pullHandlers(), s.issueHandlers(),
		s.reactionHandlers(), s.actionHandlers(), s.checkHandlers(), s.deploymentHandlers(), s.compareHandlers(),
	} {
		for key, h := range area {
			all[key] = h
		}
	}
	return all
}
