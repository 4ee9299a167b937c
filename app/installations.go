package app

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"
	"golang.org/x/sync/errgroup"

	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/internal/ghlimit"
	"github.com/ripcord/ripcord/internal/store"
)

// installations keeps the table of App installations and their repositories
// up to date from installation and installation_repositories events.
type installations struct {
	// github reads an installation's suspension as the App (its JWT).
	github githubapp.ClientCreator
	log    *slog.Logger
}

// installationReadTimeout bounds the read of an installation from GitHub:
// the drain round waits for it, and the event is applied without it.
const installationReadTimeout = 15 * time.Second

func (installations) Handles() []string {
	return []string{"installation", "installation_repositories"}
}

func (h installations) Handle(ctx context.Context, d Delivery) (Commit, error) {
	switch d.Event {
	case "installation":
		var ev github.InstallationEvent
		if err := json.Unmarshal(d.Body, &ev); err != nil {
			return nil, fmt.Errorf("decode installation event: %w", err)
		}
		var suspended bool
		switch ev.GetAction() {
		case "deleted": // applied whatever GitHub says
		case "suspend", "unsuspend":
			suspended = h.suspendedNow(ctx, d, ev.GetInstallation().GetID(), ev.GetAction() == "suspend")
		default:
			suspended = h.suspendedNow(ctx, d, ev.GetInstallation().GetID(), ev.GetInstallation().SuspendedAt != nil)
			// created, new_permissions_accepted: GitHub signs the body,
			// not the delivery id, so one posted again (or delivered
			// late) names a repository removed since. The repositories
			// recorded are those GitHub says the installation has now.
			repos, err := h.installedNow(ctx, d, ev, suspended)
			if err != nil {
				return nil, err
			}
			ev.Repositories = repos
		}
		return installationCommit(ev, d.ReceivedAt, suspended), nil
	case "installation_repositories":
		var ev github.InstallationRepositoriesEvent
		if err := json.Unmarshal(d.Body, &ev); err != nil {
			return nil, fmt.Errorf("decode installation_repositories event: %w", err)
		}
		// A suspended installation can still have repositories added or
		// removed; it stays suspended until unsuspend. The payload's
		// suspended_at may be older than a suspend or unsuspend applied
		// before, so GitHub is asked (suspendedNow).
		suspended := h.suspendedNow(ctx, d, ev.GetInstallation().GetID(), ev.GetInstallation().SuspendedAt != nil)
		// Nor can an added or removed event be ordered (its payload has no
		// time of the repository's change), and GitHub signs a delivery's
		// body, not its id: one posted again under a new id would record a
		// repository removed since, or forget one added back. What GitHub
		// says of each repository now is applied (repositoriesNow).
		added, err := h.repositoriesNow(ctx, d, ev.GetInstallation().GetID(), ev.RepositoriesAdded, true)
		if err != nil {
			return nil, err
		}
		removedNow, err := h.repositoriesNow(ctx, d, ev.GetInstallation().GetID(), ev.RepositoriesRemoved, false)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, tx *sql.Tx) error {
			inst := ev.GetInstallation()
			if stale, err := olderThanDeletion(ctx, tx, inst, d.ReceivedAt); err != nil || stale {
				return err
			}
			if err := upsertInstallation(ctx, tx, inst, suspended); err != nil {
				return err
			}
			if err := addRepositories(ctx, tx, inst.GetID(), added); err != nil {
				return err
			}
			var removed []string
			for _, r := range removedNow {
				if _, err := tx.ExecContext(ctx, `DELETE FROM installation_repositories WHERE installation_id = $1 AND repository = $2`,
					inst.GetID(), r.GetFullName()); err != nil {
					return fmt.Errorf("remove repository %s: %w", r.GetFullName(), err)
				}
				removed = append(removed, r.GetFullName())
			}
			return forgetUninstalled(ctx, tx, removed)
		}, nil
	}
	return nil, nil
}

// suspendedNow is whether GitHub says the installation is suspended now.
// GitHub does not promise delivery order, and an installation's
// updated_at does not move between suspend and unsuspend, so an old
// unsuspend delivered after a newer suspend (or the reverse, or an old
// created or installation_repositories event with its suspended_at of
// then) cannot be told from its payload: the installation as GitHub has
// it is the truth. When GitHub cannot be asked (no App configured,
// unreachable, an error after the client's retries), the event's word
// (fromEvent: its action, or its installation's suspended_at) is applied,
// and the log says so.
func (h installations) suspendedNow(ctx context.Context, d Delivery, id int64, fromEvent bool) bool {
	err := func() error {
		if h.github == nil {
			return errors.New("no GitHub client")
		}
		gh, err := h.github.NewAppClient()
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, installationReadTimeout)
		defer cancel()
		inst, _, err := gh.Apps.GetInstallation(ctx, id)
		if err != nil {
			return err
		}
		fromEvent = inst.SuspendedAt != nil
		return nil
	}()
	if err != nil && h.log != nil {
		// Without an App nothing can be read, and the start-up log says
		// so already: no warning for every installation event.
		level := slog.LevelWarn
		if errors.Is(err, ghclient.ErrNotConfigured) {
			level = slog.LevelInfo
		}
		h.log.Log(ctx, level, "could not read the installation from GitHub; its suspension is taken from the event instead",
			"installation", id, "delivery", d.ID, "action", d.Action, "suspended", fromEvent, "err", err)
	}
	return fromEvent
}

// repositoriesNow keeps, of repos that an installation_repositories event
// adds to (installed) or removes from installation id (or an installation
// event records, installedNow), those that GitHub says the installation
// has (installed) or has not now: GET
// /repos/{owner}/{repo}/installation, as the App, one read per repository
// the event names. A repository GitHub has under another installation is
// not this one's. When no App is configured nothing can be asked and the
// event is taken at its word; any other failure to ask is the delivery's,
// retried: an unchecked added event is what a replay would need.
func (h installations) repositoriesNow(ctx context.Context, d Delivery, id int64, repos []*github.Repository, installed bool) ([]*github.Repository, error) {
	if len(repos) == 0 {
		return repos, nil
	}
	var gh *github.Client
	var err error
	if h.github == nil {
		err = fmt.Errorf("no GitHub client: %w", ghclient.ErrNotConfigured)
	} else {
		gh, err = h.github.NewAppClient()
	}
	if errors.Is(err, ghclient.ErrNotConfigured) {
		if h.log != nil {
			h.log.Info("no App to ask GitHub about the repositories of an installation; the event is taken at its word",
				"installation", id, "delivery", d.ID, "action", d.Action, "err", err)
		}
		return repos, nil
	}
	if err != nil {
		return nil, fmt.Errorf("github client of the App: %w", err)
	}
	// An event can name hundreds of repositories (an account switched to
	// "All repositories"): the reads go side by side, a few at a time, so
	// that the drain round waits for tens of them, not hundreds.
	has := make([]bool, len(repos))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(repositoryReads)
	for i, r := range repos {
		g.Go(func() error {
			var err error
			has[i], err = h.hasRepository(gctx, gh, id, r.GetFullName())
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var out []*github.Repository
	for i, r := range repos {
		if has := has[i]; has == installed {
			out = append(out, r)
			continue
		}
		if h.log != nil {
			h.log.Info("installation event not applied to a repository: GitHub has it otherwise now "+
				"(the event posted again, or delivered late)", "installation", id, "repository", r.GetFullName(),
				"delivery", d.ID, "action", d.Action, "installed_now", has[i])
		}
	}
	return out, nil
}

// installedNow is the repositories GitHub says installation ev names has
// now, for an installation event that records its payload's repositories
// (created, new_permissions_accepted).
//
// One list of the installation's repositories (GET
// /installation/repositories, with the installation's token, 100 a page)
// answers for all of them in one or a few reads, where asking of each
// repository as the App (repositoriesNow) costs one read per repository:
// hundreds when the installation has "All repositories". It also has the
// repositories added since the event, which are recorded with the rest.
// GitHub gives no token to a suspended installation (403) nor to a
// deleted one (404), and refuses a token it gave before they were; the
// App's own reads answer for them still: then each repository of the
// payload is asked of as the App (a deleted installation has none; its
// event is ignored anyway once its deletion was applied,
// olderThanDeletion). Without an App the payload is taken at its word, as
// repositoriesNow does; any other failure to ask is the delivery's,
// retried, never applied from the payload.
func (h installations) installedNow(ctx context.Context, d Delivery, ev github.InstallationEvent, suspended bool) ([]*github.Repository, error) {
	id := ev.GetInstallation().GetID()
	if h.github != nil && !suspended {
		repos, err := h.listRepositories(ctx, id)
		if err == nil || !(errors.Is(err, ghclient.ErrNotConfigured) || refusedInstallation(err)) {
			return repos, err
		}
		if h.log != nil && !errors.Is(err, ghclient.ErrNotConfigured) {
			h.log.Info("GitHub refused the installation its repositories; each is asked of as the App instead",
				"installation", id, "delivery", d.ID, "action", d.Action, "err", err)
		}
	}
	return h.repositoriesNow(ctx, d, id, ev.Repositories, true)
}

// listRepositories reads every repository installation id has now, with
// its installation token.
func (h installations) listRepositories(ctx context.Context, id int64) ([]*github.Repository, error) {
	gh, err := h.github.NewInstallationClient(id)
	if err != nil {
		return nil, fmt.Errorf("github client of installation %d: %w", id, err)
	}
	var out []*github.Repository
	opts := &github.ListOptions{PerPage: 100}
	for {
		list, resp, err := func() (*github.ListRepositories, *github.Response, error) {
			ctx, cancel := context.WithTimeout(ctx, installationReadTimeout)
			defer cancel()
			return gh.Apps.ListRepos(ctx, opts)
		}()
		if err != nil {
			return nil, fmt.Errorf("repositories of installation %d: %w", id, err)
		}
		out = append(out, list.Repositories...)
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// refusedInstallation reports whether GitHub refused the installation
// itself: its token (403: suspended; 404: deleted), or a token it gave
// before (401, 403, 404). A rate limit is not a refusal, nor is a
// failure to answer.
func refusedInstallation(err error) bool {
	var he *ghinstallation.HTTPError
	var er *github.ErrorResponse
	var resp *http.Response
	switch {
	case errors.As(err, &he):
		resp = he.Response
	case errors.As(err, &er):
		resp = er.Response
	}
	if resp == nil {
		return false
	}
	if _, _, limited := ghlimit.Lifts(err, time.Now()); limited {
		return false
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		return true
	}
	return false
}

// repositoryReads is how many of repositoriesNow's reads go at once.
const repositoryReads = 8

// hasRepository is whether GitHub says installation id has repository now.
func (h installations) hasRepository(ctx context.Context, gh *github.Client, id int64, repository string) (bool, error) {
	owner, name, ok := strings.Cut(repository, "/")
	if !ok || owner == "" || name == "" {
		return false, nil // no such repository on GitHub
	}
	ctx, cancel := context.WithTimeout(ctx, installationReadTimeout)
	defer cancel()
	inst, _, err := gh.Apps.FindRepositoryInstallation(ctx, owner, name)
	var resp *github.ErrorResponse
	if errors.As(err, &resp) && resp.Response != nil && resp.Response.StatusCode == http.StatusNotFound {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("installation of %s: %w", repository, err)
	}
	return inst.GetID() == id, nil
}

// installationCommit applies an installation event; suspended is what it
// stores of the installation's suspension (suspendedNow).
func installationCommit(ev github.InstallationEvent, received time.Time, suspended bool) Commit {
	inst := ev.GetInstallation()
	return func(ctx context.Context, tx *sql.Tx) error {
		if ev.GetAction() == "deleted" {
			return deleteInstallation(ctx, tx, inst, ev.Repositories, received)
		}
		if stale, err := olderThanDeletion(ctx, tx, inst, received); err != nil || stale {
			return err
		}
		switch ev.GetAction() {
		case "suspend", "unsuspend":
			return upsertInstallation(ctx, tx, inst, suspended)
		}
		// created, new_permissions_accepted: (re)record it and its repositories.
		if err := upsertInstallation(ctx, tx, inst, suspended); err != nil {
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
// The repositories are the ones recorded and the ones the event lists: a
// repository whose addition was never delivered is uninstalled all the same.
func deleteInstallation(ctx context.Context, tx *sql.Tx, inst *github.Installation, repos []*github.Repository, received time.Time) error {
	gone, err := installationRepositories(ctx, tx, inst.GetID())
	if err != nil {
		return err
	}
	for _, r := range repos {
		gone = append(gone, r.GetFullName())
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM installations WHERE id = $1`, inst.GetID()); err != nil {
		return fmt.Errorf("delete installation %d: %w", inst.GetID(), err)
	}
	if err := forgetUninstalled(ctx, tx, gone); err != nil {
		return err
	}
	// Its rollouts' rate-limit episode ends with a request of the
	// installation answered after the reset, which never comes now.
	if _, err := tx.ExecContext(ctx, `DELETE FROM rollout_rate_limits WHERE installation_id = $1`, inst.GetID()); err != nil {
		return fmt.Errorf("forget the rate limit of deleted installation %d: %w", inst.GetID(), err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO installation_tombstones (id, deleted_at, updated_at) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET deleted_at = excluded.deleted_at,
			updated_at = CASE WHEN excluded.updated_at > installation_tombstones.updated_at
				THEN excluded.updated_at ELSE installation_tombstones.updated_at END`,
		inst.GetID(), store.Micros(received), eventTime(inst, received))
	if err != nil {
		return fmt.Errorf("record deletion of installation %d: %w", inst.GetID(), err)
	}
	return nil
}

// installationRepositories lists the repositories recorded for an
// installation.
func installationRepositories(ctx context.Context, tx *sql.Tx, id int64) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT repository FROM installation_repositories WHERE installation_id = $1`, id)
	if err != nil {
		return nil, fmt.Errorf("read repositories of installation %d: %w", id, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return nil, fmt.Errorf("read repositories of installation %d: %w", id, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read repositories of installation %d: %w", id, err)
	}
	return out, nil
}

// forgetUninstalled drops what ripcord keeps of a repository only while
// the App is installed on it: its .github/ripcord.yml as last read
// (repo_configs), which readers that do not call GitHub (eligibility, the
// pages, a release check) would otherwise go on answering from, and which
// no read refreshes any more. A repository another installation still
// lists (one moved between accounts before its removal here was
// delivered) keeps it. Release records and audit events are history and
// stay.
func forgetUninstalled(ctx context.Context, tx *sql.Tx, repositories []string) error {
	for _, r := range repositories {
		if _, err := tx.ExecContext(ctx, `DELETE FROM repo_configs WHERE repository = $1
			AND NOT EXISTS (SELECT 1 FROM installation_repositories WHERE repository = $1)`, r); err != nil {
			return fmt.Errorf("forget the config of uninstalled repository %s: %w", r, err)
		}
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
