package app

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ripcord/ripcord/internal/payload"
	"github.com/ripcord/ripcord/internal/store"
)

// maxBatch bounds one group commit; more waiting deliveries go in the next.
const maxBatch = 256

// commitDelay bounds how long a batch waits for the deliveries on their way
// to the writer (see expect), as PostgreSQL's commit_delay waits when other
// transactions are active: a batch costs a commit and a flush whatever its
// size (on this project's machine a flush costs ~100 µs of CPU), and a
// delivery whose request is being read or validated arrives tens of µs
// later. With nothing on its way a batch is written at once. Alternated
// runs of the load command: batches of ~10 rather than ~8.5, +5-18 %
// deliveries/s, p99 lower (PERFORMANCE.md, session 4).
const commitDelay = 300 * time.Microsecond

// commitTimeout bounds one group commit of deliveries or of facts. A
// database that stops answering (a partition, a hung server) rather than
// refusing would otherwise hold every request until TCP gave up, minutes
// later; GitHub gives up on a delivery after 10 s, so past that nobody
// waits for the answer. A commit cut short answers 503: should it have
// committed after all, the redelivery is a duplicate, stored once.
const commitTimeout = 8 * time.Second

// groupWriter writes deliveries in group commits: a delivery that arrives
// while a commit is in flight waits for the next one, which takes every
// delivery that arrived meanwhile. One disk flush then covers many
// deliveries, and at low load a delivery is committed at once (no timer).
// The deliveries table is the durable queue; once a batch is durable the
// writer answers its requests and wakes the drain.
//
// On SQLite the flush is not part of the commit (store.SyncWAL): a batch
// is committed, which holds SQLite's one writer, and the WAL flushed
// after, which does not. Commit and flush alternate: a pipeline that wrote
// the next batch during the flush made batches a third smaller and cost
// 10 % more CPU per delivery (PERFORMANCE.md, session 4). (On PostgreSQL,
// whose commit is durable, three committers side by side were tried: no
// faster than one, with smaller batches.)
type groupWriter struct {
	db      *store.DB
	metrics *metrics
	// acts reports whether some handler takes an event's action. A delivery
	// none takes is stored finished, ignored: the drain would only
	// have marked it so, in another write. nil: every delivery is queued.
	acts func(event, action string) bool
	// wakeDrain asks the drain (drain.go) for a round; it never blocks.
	wakeDrain func()
	// health, when set, hears whether each batch could be written.
	health *dbHealth

	in       chan *pendingWrite
	coming   atomic.Int64  // deliveries on their way to Write (expect)
	delay    time.Duration // commitDelay; tests set their own
	timeout  time.Duration // commitTimeout, or Options.CommitTimeout
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

type pendingWrite struct {
	d        Delivery
	stored   []byte  // d.Body as stored: packed (internal/payload)
	buf      *[]byte // from packBuffers, back to it once answered
	inserted bool
	state    string // what it is stored as: queued, or ignored
	err      error
	done     chan struct{}
}

// writeBatch is one group commit on its way to its answers.
type writeBatch struct {
	writes []*pendingWrite
	start  time.Time
	err    error
}

var errStopping = errors.New("intake: the server is stopping")

func newGroupWriter(db *store.DB, m *metrics, acts func(event, action string) bool, wakeDrain func(), timeout time.Duration) *groupWriter {
	w := &groupWriter{db: db, metrics: m, acts: acts, wakeDrain: wakeDrain, delay: commitDelay, timeout: timeout,
		in: make(chan *pendingWrite), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		w.run()
		close(w.done)
	}()
	return w
}

// expect notes a delivery on its way to Write, so that the batch being
// gathered waits for it (up to the writer's delay). arrived takes it off
// again; call it once, when the delivery is handed to Write or refused.
func (w *groupWriter) expect() (arrived func()) {
	w.coming.Add(1)
	var once sync.Once
	return func() { once.Do(func() { w.coming.Add(-1) }) }
}

// packBuffers are the buffers payloads are packed into: a 12 kB payload
// needs one of 14 kB, and a new one for every delivery was a fifth of what
// the intake allocated.
var packBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBuffer bounds the buffers kept: a rare large payload's is dropped.
const maxPooledBuffer = 256 << 10

// releaseBuffer hands the packing buffer back once nothing reads it: the
// batch is committed (or failed) and the statements that read it are done.
func (p *pendingWrite) releaseBuffer() {
	if p.buf == nil {
		return
	}
	if c := cap(p.stored); c > cap(*p.buf) && c <= maxPooledBuffer && payload.Packed(p.stored) {
		*p.buf = p.stored[:0] // a larger buffer PackInto made: keep it instead
	}
	packBuffers.Put(p.buf)
	p.buf, p.stored = nil, nil
}

// Write stores d durably, queued for the drain or, when no handler takes
// its event, ignored. inserted is false when a delivery with the same id
// was stored before (a redelivery).
func (w *groupWriter) Write(ctx context.Context, d Delivery) (inserted bool, state string, err error) {
	// Packed here, on the request's goroutine: the writer's goroutine is
	// the one every delivery waits for.
	p := &pendingWrite{d: d, state: DeliveryQueued, done: make(chan struct{})}
	if w.acts != nil && !w.acts(d.Event, d.Action) {
		p.state = DeliveryIgnored
	}
	p.buf = packBuffers.Get().(*[]byte)
	p.stored = payload.PackInto(*p.buf, d.Body)
	select {
	case w.in <- p:
	case <-w.stop:
		return false, "", errStopping
	case <-ctx.Done():
		return false, "", ctx.Err()
	}
	// Once handed over, the write completes whatever the caller does, so wait
	// for it: answering before the commit would break "stored, then 202".
	<-p.done
	return p.inserted, p.state, p.err
}

// Close finishes the commits in flight, answers them, and stops taking
// writes.
func (w *groupWriter) Close() {
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done
}

// run takes the deliveries waiting, commits them, makes them durable and
// answers them.
func (w *groupWriter) run() {
	delay := time.NewTimer(time.Hour)
	delay.Stop()
	for {
		var first *pendingWrite
		select {
		case first = <-w.in:
		case <-w.stop:
			return
		}
		b := &writeBatch{writes: []*pendingWrite{first}, start: time.Now()}
	gather:
		for len(b.writes) < maxBatch {
			select {
			case p := <-w.in:
				b.writes = append(b.writes, p)
			default:
				break gather
			}
		}
		if w.coming.Load() > 0 {
			delay.Reset(w.delay)
		wait:
			for len(b.writes) < maxBatch && w.coming.Load() > 0 {
				select {
				case p := <-w.in:
					b.writes = append(b.writes, p)
				case <-delay.C:
					break wait
				}
			}
			delay.Stop()
		}
		b.err = w.commit(b.writes)
		if b.err == nil && w.db.CanSyncWAL() {
			b.err = w.db.SyncWAL()
		}
		if w.health != nil {
			if b.err != nil {
				w.health.failed(b.err)
			} else {
				w.health.ok()
			}
		}
		w.answer(b)
	}
}

// answer ends a batch's requests, and wakes the drain for new deliveries.
func (w *groupWriter) answer(b *writeBatch) {
	w.metrics.commitTime.Observe(time.Since(b.start).Seconds())
	w.metrics.batchSize.Observe(float64(len(b.writes)))
	queued := false // some delivery new to the drain
	for _, p := range b.writes {
		switch {
		case b.err != nil:
			p.err = b.err
		case p.inserted && p.state == DeliveryIgnored:
			w.metrics.processed.WithLabelValues(eventLabel(p.d.Event), DeliveryIgnored).Inc()
		case p.inserted:
			queued = true
		}
		p.releaseBuffer()
		close(p.done)
	}
	if queued {
		w.wakeDrain()
	}
}

// commit writes a batch in one transaction and marks the deliveries that
// were new (inserted). Without a separate WAL flush the commit itself is
// durable.
func (w *groupWriter) commit(batch []*pendingWrite) error {
	// The commit must finish even if a client hangs up: the caller's context
	// is not used here. It is bounded all the same (commitTimeout).
	ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
	defer cancel()
	// The same delivery twice in one batch is stored once; the second is
	// answered as a redelivery.
	unique := make([]*pendingWrite, 0, len(batch))
	seen := make(map[string]bool, len(batch))
	for _, p := range batch {
		p.inserted = false // set by the insert for each delivery it stores
		if !seen[p.d.ID] {
			seen[p.d.ID] = true
			unique = append(unique, p)
		}
	}
	insert := w.insertSQLite
	if w.db.Dialect == store.Postgres {
		insert = w.insertPostgres
	}
	inTx := w.db.InDurableTx
	if w.db.CanSyncWAL() {
		inTx = w.db.InTx // flushed by run before anyone is answered
	}
	gate := w.db.Gate() // see store.checkpointer: lets the WAL start over
	gate.Lock()
	defer gate.Unlock()
	return inTx(ctx, func(tx *sql.Tx) error { return insert(ctx, tx, unique) })
}

// insertSQLite stores each delivery's row, then its body under the row's
// seq (see migration 00009: a body is written once, never by an UPDATE).
// In-process a statement costs no round trip, and the connection keeps
// both prepared (store's stmtConn).
func (w *groupWriter) insertSQLite(ctx context.Context, tx *sql.Tx, batch []*pendingWrite) error {
	for _, p := range batch {
		res, err := tx.ExecContext(ctx, insertDeliverySQLite, p.d.ID, p.d.Event, p.d.Action, p.d.InstallationID,
			p.d.Repository, store.Micros(p.d.ReceivedAt), p.state)
		if err != nil {
			return fmt.Errorf("store delivery %s: %w", p.d.ID, err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			continue // stored before: a redelivery
		}
		seq, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("store delivery %s: read its seq: %w", p.d.ID, err)
		}
		if _, err := tx.ExecContext(ctx, insertDeliveryBody, seq, p.stored); err != nil {
			return fmt.Errorf("store payload of delivery %s: %w", p.d.ID, err)
		}
		p.inserted = true
	}
	return nil
}

// insertPostgres stores the whole batch in one statement: on PostgreSQL a
// statement costs a round trip, so one per delivery made a commit of many
// deliveries wait on as many round trips.
//
// The rows go in in the order of their ids, not of their arrival: another
// replica's batch may hold some of the same deliveries (a redelivery sent
// to it), and the insert of one waits for the other's uncommitted row of
// the same id. In arrival order two such batches could each hold a row the
// other waits for, and PostgreSQL ended one as a deadlock, failing every
// delivery of it; in one order, one waits for the other and then finds
// its rows stored.
func (w *groupWriter) insertPostgres(ctx context.Context, tx *sql.Tx, batch []*pendingWrite) error {
	batch = slices.SortedFunc(slices.Values(batch), func(a, b *pendingWrite) int { return strings.Compare(a.d.ID, b.d.ID) })
	n := len(batch)
	ids, events, actions, repos := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	installations, received := make([]int64, n), make([]int64, n)
	bodies, states := make([][]byte, n), make([]string, n)
	byID := make(map[string]*pendingWrite, n)
	for i, p := range batch {
		ids[i], events[i], actions[i], repos[i] = p.d.ID, p.d.Event, p.d.Action, p.d.Repository
		installations[i], received[i], bodies[i] = p.d.InstallationID, store.Micros(p.d.ReceivedAt), p.stored
		states[i] = p.state
		byID[p.d.ID] = p
	}
	rows, err := tx.QueryContext(ctx, insertDeliveriesPostgres, ids, events, actions, installations, repos, bodies, received, states)
	if err != nil {
		return fmt.Errorf("store %d deliveries: %w", n, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return fmt.Errorf("store %d deliveries: %w", n, err)
		}
		if p := byID[id]; p != nil {
			p.inserted = true
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store %d deliveries: %w", n, err)
	}
	return nil
}

// A delivery stored ignored is finished when it is received.
const (
	insertDeliverySQLite = `INSERT INTO deliveries (id, event, action, installation_id, repository, received_at, state, processed_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, CASE WHEN $7 = 'ignored' THEN $6 END) ON CONFLICT (id) DO NOTHING`
	insertDeliveryBody       = `INSERT INTO delivery_bodies (seq, body) VALUES ($1, $2)`
	insertDeliveriesPostgres = `INSERT INTO deliveries (id, event, action, installation_id, repository, body, received_at, state, processed_at)
SELECT id, event, action, installation_id, repository, body, received_at, state,
	CASE WHEN state = 'ignored' THEN received_at END
FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::bytea[], $7::bigint[], $8::text[])
	AS t(id, event, action, installation_id, repository, body, received_at, state)
ON CONFLICT (id) DO NOTHING RETURNING id`
)
