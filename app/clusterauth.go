package app

import (
	"log/slog"
	"net/http"

	"github.com/ripcord/ripcord/app/config"
)

// ClusterTokenCheck is the facts API's cluster-token rule for other
// endpoints of a cluster (the agent's actions API): it returns 0 when the
// request's bearer is the named cluster's token, 401 when it is no
// cluster's, 403 when it is another cluster's, with a message saying so.
// It is the same checkClusterToken that guards POST /api/v1/facts/{cluster};
// log hears of a token file that cannot be read again.
func ClusterTokenCheck(cfg *config.Config, log *slog.Logger) func(r *http.Request, cluster string) (int, string) {
	s := &Server{cfg: cfg, log: log}
	return s.checkClusterToken
}
