package app

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/payload"
	"github.com/ripcord/ripcord/internal/store"
)

// Delivery states and the delivery itself are the pipeline's.
const (
	DeliveryQueued    = pipeline.Queued
	DeliveryProcessed = pipeline.Processed
	DeliveryFailed    = pipeline.Failed
	DeliveryIgnored   = pipeline.Ignored
)

// Delivery is one webhook delivery as stored.
type Delivery = pipeline.Delivery

var errNotFound = errors.New("not found")

const deliveryColumns = `id, event, action, installation_id, repository, received_at, state, attempts, last_error, processed_at`

func scanDelivery(row interface{ Scan(...any) error }) (Delivery, error) {
	var d Delivery
	var received int64
	var processed *int64
	err := row.Scan(&d.ID, &d.Event, &d.Action, &d.InstallationID, &d.Repository, &received,
		&d.State, &d.Attempts, &d.LastError, &processed)
	d.ReceivedAt = store.Time(received)
	d.ProcessedAt = store.TimePtr(processed)
	return d, err
}

// getDelivery reads one delivery; withBody also loads the payload.
func getDelivery(ctx context.Context, dialect store.Dialect, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, id string, withBody bool) (Delivery, error) {
	if withBody {
		var d Delivery
		query := `SELECT event, action, body, attempts, state, repository, installation_id FROM deliveries WHERE id = $1`
		if dialect == store.SQLite {
			query = `SELECT d.event, d.action, b.body, d.attempts, d.state, d.repository, d.installation_id
				FROM deliveries d JOIN delivery_bodies b ON b.seq = d.seq WHERE d.id = $1`
		}
		err := q.QueryRowContext(ctx, query, id).
			Scan(&d.Event, &d.Action, &d.Body, &d.Attempts, &d.State, &d.Repository, &d.InstallationID)
		if errors.Is(err, sql.ErrNoRows) {
			return d, errNotFound
		}
		d.ID = id
		if err == nil {
			d.Body, err = payload.Unpack(d.Body)
		}
		return d, err
	}
	d, err := scanDelivery(q.QueryRowContext(ctx, `SELECT `+deliveryColumns+` FROM deliveries WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return d, errNotFound
	}
	return d, err
}

// listDeliveriesSQL reads the newest deliveries first, backwards along the
// deliveries_received_at index.
const listDeliveriesSQL = `SELECT ` + deliveryColumns + ` FROM deliveries ORDER BY received_at DESC, id DESC LIMIT $1`

// listDeliveries returns the newest deliveries first.
func listDeliveries(ctx context.Context, db *sql.DB, limit int) ([]Delivery, error) {
	rows, err := db.QueryContext(ctx, listDeliveriesSQL, limit)
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	defer rows.Close()
	out := []Delivery{}
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, fmt.Errorf("list deliveries: %w", err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// placeholders returns "$from, $from+1, …" for n values.
func placeholders(from, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(from+i))
	}
	return b.String()
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
