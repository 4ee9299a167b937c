package setup

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ripcord/ripcord/internal/store"
)

// stateTTL is how long a /setup page's state is accepted: GitHub's code
// expires after an hour as well.
const stateTTL = time.Hour

// Credentials are a registered App as GitHub's manifest conversion returns
// it: what ripcord needs to act as the App, receive its webhooks and sign
// people in through it.
type Credentials struct {
	AppID         int64
	Slug          string
	HTMLURL       string // https://github.com/apps/SLUG
	ClientID      string
	ClientSecret  string
	WebhookSecret string
	PrivateKey    []byte // PEM
	APIURL        string // github.api_url when it was registered
	CreatedAt     time.Time
}

// InstallURL is where an admin installs the App.
func (c Credentials) InstallURL() string { return c.HTMLURL + "/installations/new" }

// Store keeps registered Apps and the states of set-up pages in the
// database; secrets are sealed with the Keyring's key.
type Store struct {
	db   *store.DB
	keys *Keyring
}

// NewStore returns a Store on db.
func NewStore(db *store.DB, keys *Keyring) *Store { return &Store{db: db, keys: keys} }

// Keys is the store's keyring.
func (s *Store) Keys() *Keyring { return s.keys }

func label(column string, appID int64) string {
	return "app_credentials." + column + ":" + strconv.FormatInt(appID, 10)
}

// ErrRegistered: another App is stored already (registered through another
// replica, which this one has not picked up yet).
var ErrRegistered = errors.New("another GitHub App is registered already")

// Save stores c, replacing an earlier row of the same App. It refuses
// (ErrRegistered) when another App is stored: a second registration must
// not replace the App every replica uses at its next start.
func (s *Store) Save(ctx context.Context, c Credentials) error {
	aead, err := s.keys.cipher(true)
	if err != nil {
		return err
	}
	sealed := map[string][]byte{}
	for column, plain := range map[string][]byte{"client_secret": []byte(c.ClientSecret),
		"webhook_secret": []byte(c.WebhookSecret), "private_key": c.PrivateKey} {
		if sealed[column], err = seal(aead, plain, label(column, c.AppID)); err != nil {
			return err
		}
	}
	return s.db.InDurableTx(ctx, func(tx *sql.Tx) error {
		var other int64
		err := tx.QueryRowContext(ctx, `SELECT app_id FROM app_credentials WHERE app_id <> $1 LIMIT 1`, c.AppID).Scan(&other)
		if err == nil {
			return fmt.Errorf("store App %d: %w (App %d)", c.AppID, ErrRegistered, other)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("look for a stored App: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM app_credentials WHERE app_id = $1`, c.AppID); err != nil {
			return fmt.Errorf("replace App %d: %w", c.AppID, err)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO app_credentials
			(app_id, slug, html_url, client_id, api_url, client_secret, webhook_secret, private_key, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			c.AppID, c.Slug, c.HTMLURL, c.ClientID, c.APIURL, sealed["client_secret"], sealed["webhook_secret"],
			sealed["private_key"], store.Micros(c.CreatedAt))
		if err != nil {
			return fmt.Errorf("store App %d: %w", c.AppID, err)
		}
		// With an App stored no replica offers a registration any more:
		// the tokens in the logs need not open anything again.
		if _, err := tx.ExecContext(ctx, `DELETE FROM app_setup_tokens`); err != nil {
			return fmt.Errorf("forget the set-up tokens: %w", err)
		}
		return nil
	})
}

// Load returns the newest stored App; ok is false when there is none.
func (s *Store) Load(ctx context.Context) (c Credentials, ok bool, err error) {
	var clientSecret, webhookSecret, key []byte
	var created int64
	err = s.db.Read.QueryRowContext(ctx, `SELECT app_id, slug, html_url, client_id, api_url,
		client_secret, webhook_secret, private_key, created_at
		FROM app_credentials ORDER BY created_at DESC, app_id DESC LIMIT 1`).Scan(
		&c.AppID, &c.Slug, &c.HTMLURL, &c.ClientID, &c.APIURL, &clientSecret, &webhookSecret, &key, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Credentials{}, false, nil
	}
	if err != nil {
		return Credentials{}, false, fmt.Errorf("read the stored App: %w", err)
	}
	c.CreatedAt = store.Time(created)
	aead, err := s.keys.cipher(false)
	if err != nil {
		return Credentials{}, false, fmt.Errorf("the stored App %d cannot be read: no key in %s: %w", c.AppID, s.keys.Source(), err)
	}
	plain := map[string][]byte{}
	for column, sealed := range map[string][]byte{"client_secret": clientSecret, "webhook_secret": webhookSecret, "private_key": key} {
		if plain[column], err = open(aead, sealed, label(column, c.AppID)); err != nil {
			return Credentials{}, false, fmt.Errorf("the stored App %d was sealed with another key than %s: %w", c.AppID, s.keys.Source(), err)
		}
	}
	c.ClientSecret, c.WebhookSecret, c.PrivateKey = string(plain["client_secret"]), string(plain["webhook_secret"]), plain["private_key"]
	return c, true, nil
}

// Registered is the newest stored App's public side (id, slug, page),
// without opening its secrets; ok is false when there is none.
func (s *Store) Registered(ctx context.Context) (c Credentials, ok bool, err error) {
	err = s.db.Read.QueryRowContext(ctx, `SELECT app_id, slug, html_url FROM app_credentials
		ORDER BY created_at DESC, app_id DESC LIMIT 1`).Scan(&c.AppID, &c.Slug, &c.HTMLURL)
	if errors.Is(err, sql.ErrNoRows) {
		return Credentials{}, false, nil
	}
	if err != nil {
		return Credentials{}, false, fmt.Errorf("read the stored App: %w", err)
	}
	return c, true, nil
}

// IssueState records a new random state for one set-up page, and forgets
// states too old to be accepted.
func (s *Store) IssueState(ctx context.Context, now time.Time) (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make a state: %w", err)
	}
	state := hex.EncodeToString(b)
	err := s.db.InTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM app_setup_states WHERE created_at < $1`, store.Micros(now.Add(-stateTTL))); err != nil {
			return fmt.Errorf("forget old set-up states: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO app_setup_states (state, created_at) VALUES ($1, $2)`, state, store.Micros(now)); err != nil {
			return fmt.Errorf("store the set-up state: %w", err)
		}
		return nil
	})
	return state, err
}

// ConsumeState accepts state once, within stateTTL of its page: it is gone
// afterwards, so a reloaded callback or a replayed link is refused.
func (s *Store) ConsumeState(ctx context.Context, state string, now time.Time) (bool, error) {
	_, ok, err := s.TakeState(ctx, state, now)
	return ok, err
}

// TakeState is ConsumeState that also returns when the state was issued,
// so that a callback whose code exchange failed on the way can give it
// back with ReturnState. Taking it is one DELETE, so of two callbacks with
// the same state (on any replica) only one gets it.
func (s *Store) TakeState(ctx context.Context, state string, now time.Time) (issued time.Time, ok bool, err error) {
	if state == "" {
		return time.Time{}, false, nil
	}
	var created int64
	err = s.db.InTx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `DELETE FROM app_setup_states WHERE state = $1 AND created_at >= $2 RETURNING created_at`,
			state, store.Micros(now.Add(-stateTTL))).Scan(&created)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("check the set-up state: %w", err)
		}
		ok = true
		return nil
	})
	if err != nil || !ok {
		return time.Time{}, false, err
	}
	return store.Time(created), true, nil
}

// ReturnState gives back a state taken with TakeState, keeping the time it
// was issued: it is still accepted only within stateTTL of its page.
func (s *Store) ReturnState(ctx context.Context, state string, issued time.Time) error {
	return s.db.InTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO app_setup_states (state, created_at) VALUES ($1, $2)
			ON CONFLICT (state) DO NOTHING`, state, store.Micros(issued)); err != nil {
			return fmt.Errorf("give back the set-up state: %w", err)
		}
		return nil
	})
}
