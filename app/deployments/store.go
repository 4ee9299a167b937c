package deployments

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ripcord/ripcord/internal/store"
)

// row is a release's line in the deployments table.
type row struct {
	ReleaseID    string
	Repository   string
	DeploymentID int64
	// CreateSent: a create went out and its answer was not stored; the
	// deployment may exist on GitHub and must be looked for first.
	CreateSent bool
	// State is the last status GitHub confirmed; PendingState one that was
	// sent and may have arrived.
	State, PendingState Status
	Skipped             string
}

// errLeaseLost means another job took the release over (this one outlived
// its lease), so this one must not write.
var errLeaseLost = errors.New("deployments: lease lost to another job")

// acquire takes the release's lease for job until now+lease, creating its
// row when needed; ok is false when another job holds it.
func acquire(ctx context.Context, db *store.DB, releaseID string, job int64, now time.Time, lease time.Duration) (r row, ok bool, err error) {
	err = db.InTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO deployments (release_id, updated_at) VALUES ($1, $2)
			ON CONFLICT (release_id) DO NOTHING`, releaseID, store.Micros(now)); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE deployments SET lease_job = $2, lease_until = $3
			WHERE release_id = $1 AND (lease_job = $2 OR lease_until < $4)`,
			releaseID, job, store.Micros(now.Add(lease)), store.Micros(now))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return err
		}
		ok = true
		r, err = readRow(ctx, tx, releaseID)
		return err
	})
	if err != nil {
		return row{}, false, fmt.Errorf("take the deployment lease of %s: %w", releaseID, err)
	}
	return r, ok, nil
}

func readRow(ctx context.Context, tx *sql.Tx, releaseID string) (row, error) {
	r := row{ReleaseID: releaseID}
	err := tx.QueryRowContext(ctx, `SELECT repository, deployment_id, create_sent, state, pending_state, skipped
		FROM deployments WHERE release_id = $1`, releaseID).
		Scan(&r.Repository, &r.DeploymentID, &r.CreateSent, &r.State, &r.PendingState, &r.Skipped)
	return r, err
}

// release gives the lease up. It runs on a context of its own so a job
// cancelled mid-way still frees the release for the next one.
func release(ctx context.Context, db *store.DB, releaseID string, job int64) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, err := db.Write.ExecContext(ctx, `UPDATE deployments SET lease_job = 0, lease_until = 0
		WHERE release_id = $1 AND lease_job = $2`, releaseID, job)
	if err != nil {
		return fmt.Errorf("give the deployment lease of %s up: %w", releaseID, err)
	}
	return nil
}

// save writes the row's GitHub-facing fields, provided job still holds the
// lease.
func save(ctx context.Context, db *store.DB, r row, job int64, now time.Time) error {
	res, err := db.Write.ExecContext(ctx, `UPDATE deployments SET repository = $3, deployment_id = $4, create_sent = $5,
		state = $6, pending_state = $7, skipped = $8, updated_at = $9 WHERE release_id = $1 AND lease_job = $2`,
		r.ReleaseID, job, r.Repository, r.DeploymentID, r.CreateSent, string(r.State), string(r.PendingState),
		r.Skipped, store.Micros(now))
	if err != nil {
		return fmt.Errorf("save deployment of %s: %w", r.ReleaseID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("save deployment of %s: %w", r.ReleaseID, cmpErr(err, errLeaseLost))
	}
	return nil
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// Info is what ripcord knows of a release's GitHub deployment, for the API
// and the releases page.
type Info struct {
	ReleaseID    string `json:"release_id"`
	Repository   string `json:"repository,omitempty"`
	DeploymentID int64  `json:"deployment_id,omitempty"`
	State        string `json:"state,omitempty"`
	// Skipped says why the release has no GitHub deployment.
	Skipped string `json:"skipped,omitempty"`
}

// ErrNotFound: ripcord has not looked at the release's deployment yet.
var ErrNotFound = errors.New("deployments: no deployment known for the release")

// Get reads what is known of release id's deployment.
func Get(ctx context.Context, db *sql.DB, releaseID string) (Info, error) {
	i := Info{ReleaseID: releaseID}
	err := db.QueryRowContext(ctx, `SELECT repository, deployment_id, state, skipped FROM deployments WHERE release_id = $1`,
		releaseID).Scan(&i.Repository, &i.DeploymentID, &i.State, &i.Skipped)
	if errors.Is(err, sql.ErrNoRows) {
		return Info{}, ErrNotFound
	}
	if err != nil {
		return Info{}, fmt.Errorf("read deployment of %s: %w", releaseID, err)
	}
	return i, nil
}
