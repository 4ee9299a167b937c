package commands

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/store"
)

// A command comment runs at most once: GitHub signs a delivery's body, not
// its X-GitHub-Delivery id, so a captured `created` delivery can be posted
// again under a new id, and the intake (which dedupes by id) stores it as a
// new delivery. The comment id is the key (an edit never runs a command, so
// the same id never brings a new one); the comment_commands row is written
// with the command's effects, and a refused command has one too: a replay
// after the commenter was given write must not run what they were refused.
// Help, typos and edits have no row: their reply's key is the comment's,
// so they are answered once already.

// ranBy returns the delivery that ran (or refused) the command of comment
// c, or "" when none did. It is the early look, before the config, the
// permission and the runner are asked: a replay costs no GitHub call.
func (h *handler) ranBy(ctx context.Context, c comment) (string, error) {
	var first string
	err := h.deps.DB.Read.QueryRowContext(ctx, `SELECT delivery_id FROM comment_commands
		WHERE repository = $1 AND comment_id = $2`, c.repository, c.id).Scan(&first)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("look up the command of comment %d on %s: %w", c.id, c.repository, err)
	}
	return first, nil
}

// once runs then only if the comment's row is new in tx. Two deliveries of
// one comment decided side by side (one drain round, or two replicas) both
// passed ranBy; the second to insert finds the row, and its delivery then
// commits nothing of the command: no reaction, reply, audit or effect.
func (h *handler) once(c comment, then pipeline.Commit) pipeline.Commit {
	return func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO comment_commands (repository, comment_id, delivery_id, at)
			VALUES ($1, $2, $3, $4) ON CONFLICT (repository, comment_id) DO NOTHING`,
			c.repository, c.id, c.delivery.ID, store.Micros(h.deps.Now()))
		if err != nil {
			return fmt.Errorf("record the command of comment %d on %s: %w", c.id, c.repository, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("record the command of comment %d on %s: %w", c.id, c.repository, err)
		}
		if n == 0 {
			var first string
			if err := tx.QueryRowContext(ctx, `SELECT delivery_id FROM comment_commands
				WHERE repository = $1 AND comment_id = $2`, c.repository, c.id).Scan(&first); err != nil {
				return fmt.Errorf("look up the command of comment %d on %s: %w", c.id, c.repository, err)
			}
			h.replayed(c, first)
			return nil
		}
		return then(ctx, tx)
	}
}

// replayed logs a delivery of a comment whose command ran already. It is
// not an error of the delivery (that would retry it, for nothing), but it
// is worth a look: GitHub sends one delivery per comment (a redelivery
// keeps its id, and the intake dedupes it), so a second one was most
// likely posted by someone who captured the first.
func (h *handler) replayed(c comment, first string) {
	if first == c.delivery.ID {
		return // this very delivery ran it: a retry, not a replay
	}
	h.deps.Log.Warn("ignored a command comment delivered again under a new delivery id: "+
		"its command ran already; a signed delivery may have been captured (rotate github.webhook_secrets)",
		"delivery", c.delivery.ID, "first_delivery", first, "repository", c.repository,
		"comment_id", c.id, "user", c.user)
}
