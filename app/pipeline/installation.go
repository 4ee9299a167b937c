package pipeline

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// InstallationOf is the App's installation on repository (owner/name): the
// lowest id among the installations, not suspended, that hold it. It is 0
// when there is none; each caller says what that means for its work.
func InstallationOf(ctx context.Context, db *sql.DB, repository string) (int64, error) {
	var id int64
	err := db.QueryRowContext(ctx, `SELECT r.installation_id FROM installation_repositories r
		JOIN installations i ON i.id = r.installation_id
		WHERE r.repository = $1 AND NOT i.suspended ORDER BY r.installation_id LIMIT 1`, repository).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("installation of %s: %w", repository, err)
	}
	return id, nil
}
