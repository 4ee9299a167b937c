package app

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/internal/store"
)

// installations keeps the table of App installations and their repositories
// up to date from installation and installation_repositories events.
type installations struct{}

func (installations) Handles() []string {
	return []string{"installation", "installation_repositories"}
}

func (installations) Handle(_ context.Context, d Delivery) (Commit, error) {
	switch d.Event {
	case "installation":
		var ev github.InstallationEvent
		if err := json.Unmarshal(d.Body, &ev); err != nil {
			return nil, fmt.Errorf("decode installation event: %w", err)
		}
		return installationCommit(ev, d.ReceivedAt), nil
	case "installation_repositories":
		var ev github.InstallationRepositoriesEvent
		if err := json.Unmarshal(d.Body, &ev); err != nil {
			return nil, fmt.Errorf("decode installation_repositories event: %w", err)
		}
		return func(ctx context.Context, tx *sql.Tx) error {
			inst := ev.GetInstallation()
			if stale, err := olderThanDeletion(ctx, tx, inst, d.ReceivedAt); err != nil || stale {
				return err
			}
			// A suspended installation can still have repositories added
			// or removed; it stays suspended until unsuspend.
			if err := upsertInstallation(ctx, tx, inst, inst.SuspendedAt != nil); err != nil {
				return err
			}
			if err := addRepositories(ctx, tx, inst.GetID(), ev.RepositoriesAdded); err != nil {
				return err
			}
			for _, r := range ev.RepositoriesRemoved {
				if _, err := tx.ExecContext(ctx, `DELETE FROM installation_repositories WHERE installation_id = $1 AND repository = $2`,
					inst.GetID(), r.GetFullName()); err != nil {
					return fmt.Errorf("remove repository %s: %w", r.GetFullName(), err)
				}
			}
			return nil
		}, nil
	}
	return nil, nil
}

func installationCommit(ev github.InstallationEvent, received time.Time) Commit {
	inst := ev.GetInstallation()
	return func(ctx context.Context, tx *sql.Tx) error {
		if ev.GetAction() == "deleted" {
			return deleteInstallation(ctx, tx, inst, received)
		}
		if stale, err := olderThanDeletion(ctx, tx, inst, received); err != nil || stale {
			return err
		}
		switch ev.GetAction() {
		case "suspend", "unsuspend":
			return upsertInstallation(ctx, tx, inst, ev.GetAction() == "suspend")
		}
		// created, new_permissions_accepted: (re)record it and its repositories.
		if err := upsertInstallation(ctx, tx, inst, inst.SuspendedAt != nil); err != nil {
			return err
		}
		return addRepositories(ctx, tx, inst.GetID(), ev.Repositories)
	}
}

// eventTime is when GitHub last changed the installation as the event
// tells it: the payload's installation.updated_at, or the delivery's
// received time when the payload has none.
func eventTime(inst *github.Installation, received time.Time) int64 {
	if t := inst.GetUpdatedAt(); !t.IsZero() {
		return store.Micros(t.Time)
	}
	return store.Micros(received)
}

// deleteInstallation removes an installation and its repositories and
// leaves a tombstone, so that an older event arriving later cannot bring
// it back. A deletion is always applied: GitHub does not reuse
// installation ids. Of two deletions the tombstone keeps the later time.
func deleteInstallation(ctx context.Context, tx *sql.Tx, inst *github.Installation, received time.Time) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM installations WHERE id = $1`, inst.GetID()); err != nil {
		return fmt.Errorf("delete installation %d: %w", inst.GetID(), err)
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO installation_tombstones (id, deleted_at, updated_at) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET deleted_at = excluded.deleted_at,
			updated_at = CASE WHEN excluded.updated_at > installation_tombstones.updated_at
				THEN excluded.updated_at ELSE installation_tombstones.updated_at END`,
		inst.GetID(), store.Micros(received), eventTime(inst, received))
	if err != nil {
		return fmt.Errorf("record deletion of installation %d: %w", inst.GetID(), err)
	}
	return nil
}

// olderThanDeletion reports whether the installation was deleted and the
// event does not come after the deletion (its installation.updated_at is
// not later than the deleted event's); such an event is ignored. An event
// that is later clears the tombstone and is applied.
func olderThanDeletion(ctx context.Context, tx *sql.Tx, inst *github.Installation, received time.Time) (bool, error) {
	var deletedAt int64
	err := tx.QueryRowContext(ctx, `SELECT updated_at FROM installation_tombstones WHERE id = $1`, inst.GetID()).Scan(&deletedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read deletion of installation %d: %w", inst.GetID(), err)
	}
	if eventTime(inst, received) <= deletedAt {
		return true, nil
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM installation_tombstones WHERE id = $1`, inst.GetID()); err != nil {
		return false, fmt.Errorf("clear deletion of installation %d: %w", inst.GetID(), err)
	}
	return false, nil
}

func upsertInstallation(ctx context.Context, tx *sql.Tx, inst *github.Installation, suspended bool) error {
	now := store.Micros(time.Now())
	_, err := tx.ExecContext(ctx, `INSERT INTO installations (id, account, account_type, suspended, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $5)
		ON CONFLICT (id) DO UPDATE SET account = excluded.account, account_type = excluded.account_type,
			suspended = excluded.suspended, updated_at = excluded.updated_at`,
		inst.GetID(), inst.GetAccount().GetLogin(), inst.GetAccount().GetType(), suspended, now)
	if err != nil {
		return fmt.Errorf("record installation %d: %w", inst.GetID(), err)
	}
	return nil
}

func addRepositories(ctx context.Context, tx *sql.Tx, installationID int64, repos []*github.Repository) error {
	now := store.Micros(time.Now())
	for _, r := range repos {
		if _, err := tx.ExecContext(ctx, `INSERT INTO installation_repositories (installation_id, repository, repository_id, added_at)
			VALUES ($1, $2, $3, $4) ON CONFLICT (installation_id, repository) DO NOTHING`,
			installationID, r.GetFullName(), r.GetID(), now); err != nil {
			return fmt.Errorf("record repository %s: %w", r.GetFullName(), err)
		}
	}
	return nil
}

// installedOn reports whether the App is installed on a repository.
func installedOn(ctx context.Context, db *sql.DB, repository string) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM installation_repositories r
		JOIN installations i ON i.id = r.installation_id WHERE r.repository = $1 AND NOT i.suspended`, repository).Scan(&n)
	return n > 0, err
}
