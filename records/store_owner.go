package records

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Owner is the repository an app's environment belongs to: the repository
// of its first release that names one (in any cluster). "" when no release
// of it names a repository yet. A workflow's OIDC token vouches for its own
// repository only, so a release of an app another repository owns is not
// its to open (README, POST /api/v1/facts).
func (s *Store) Owner(ctx context.Context, app, environment string) (string, error) {
	var repo string
	err := s.db.Read.QueryRowContext(ctx, `SELECT repository FROM records
		WHERE app = $1 AND environment = $2 AND repository <> ''
		ORDER BY created_at, release_id LIMIT 1`, app, environment).Scan(&repo)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("owner of %s in %s: %w", app, environment, err)
	}
	return repo, nil
}
