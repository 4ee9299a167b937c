package deployments

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/ripcord/ripcord/app/pipeline"
)

// apiHandler is GET /api/v1/releases/{id}/deployment: the release's GitHub
// deployment, or why it has none — the first question when the
// Environments view and ripcord disagree.
type apiHandler struct{ d pipeline.Deps }

func (h apiHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	info, err := Get(r.Context(), h.d.DB.Read, id)
	if errors.Is(err, ErrNotFound) {
		pipeline.WriteError(w, http.StatusNotFound, "id", "no deployment known for release "+strconv.Quote(id)+
			": the release is unknown, or ripcord has not synced it yet")
		return
	}
	if err != nil {
		h.d.Log.Error("read deployment", "release_id", id, "error", err)
		pipeline.WriteError(w, http.StatusInternalServerError, "", "could not read the deployment")
		return
	}
	pipeline.WriteJSON(w, http.StatusOK, info)
}
