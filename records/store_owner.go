package records

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ripcord/ripcord/internal/store"
)

// Owner is the repository an app's environment belongs to: the repository
// of its first release that names one (in any cluster). "" when no release
// of it names a repository yet. A workflow's OIDC token vouches for its own
// repository only, so a release of an app another repository owns is not
// its to open (README, POST /api/v1/facts).
func (s *Store) Owner(ctx context.Context, app, environment string) (string, error) {
	var repo string
	err := s.db.Read.QueryRowContext(ctx, ownerQuery(s.db.Dialect), app, environment).Scan(&repo)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("owner of %s in %s: %w", app, environment, err)
	}
	return repo, nil
}

// ownerQuery reads the app's environment's records along records_target
// and sorts them. SQLite, which plans without statistics, would rather walk
// records_environment (migration 00027) from its oldest record, which
// reads every other app's records of the environment until this app's
// first; it is told which index to use.
func ownerQuery(dialect store.Dialect) string {
	from := `records`
	if dialect == store.SQLite {
		from += ` INDEXED BY records_target`
	}
	return `SELECT repository FROM ` + from + `
		WHERE app = $1 AND environment = $2 AND repository <> ''
		ORDER BY created_at, release_id LIMIT 1`
}
