package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ripcord/ripcord/records"
)

// Delivery tuning.
const (
	deliverBatch      = 100 // facts per request (the server takes up to 500)
	deliverMinBackoff = 500 * time.Millisecond
	deliverMaxBackoff = 30 * time.Second
	// deliveryPatience is how long deliveries to the server (facts and the
	// inventory) may fail in a row before /healthz answers 503 saying so:
	// longer than a server restart or a rolling update of it, which the
	// spool rides out, short enough that an agent the server cannot be
	// reached from, or that it refuses (a stale token, another cluster's),
	// shows as not ready within minutes rather than only in its log.
	deliveryPatience = 2 * time.Minute
)

// deliverer drains the spool to POST /api/v1/facts/{cluster}, oldest first,
// and removes a fact only once the server has taken it (or refused it for
// good), so facts arrive in order and none is lost while the server is down.
type deliverer struct {
	spool   *Spool
	http    *http.Client
	url     string
	token   func() (string, error)
	metrics *metrics
	log     *slog.Logger
	wake    chan struct{}
	// maxBackoff caps the pause between two attempts while the server is
	// unreachable.
	maxBackoff time.Duration
	// tokenFrom says where the token comes from, logged when the server
	// refuses it; "" when the caller did not say.
	tokenFrom string

	// streak is what /healthz says of the deliveries (deliveryTrouble).
	streak failureStreak
}

func newDeliverer(spool *Spool, client *http.Client, server, cluster string, token func() (string, error), m *metrics, log *slog.Logger) *deliverer {
	d := &deliverer{spool: spool, http: client, token: token, metrics: m, log: log, wake: make(chan struct{}, 1),
		maxBackoff: deliverMaxBackoff, streak: failureStreak{patience: deliveryPatience},
		url: strings.TrimSuffix(server, "/") + "/api/v1/facts/" + url.PathEscape(cluster)}
	m.factsSpooled.Set(float64(spool.Len()))
	return d
}

// enqueue spools a fact and wakes the sender.
func (d *deliverer) enqueue(f records.Fact) error {
	dropped, err := d.spool.Append(f)
	if dropped > 0 {
		d.metrics.factsFailed.WithLabelValues("overflow").Add(float64(dropped))
		d.log.Warn("spool full: dropped the oldest facts (the next resync re-sends every workload's current state)",
			"dropped", dropped, "max", d.spool.max)
	}
	d.metrics.factsSpooled.Set(float64(d.spool.Len()))
	if err != nil {
		return err
	}
	select {
	case d.wake <- struct{}{}:
	default:
	}
	return nil
}

// run sends until ctx ends, backing off while the server cannot take facts.
func (d *deliverer) run(ctx context.Context) {
	backoff := time.Duration(0)
	for {
		if d.spool.Len() == 0 {
			select {
			case <-ctx.Done():
				return
			case <-d.wake:
			}
		}
		err := d.flush(ctx)
		d.metrics.factsSpooled.Set(float64(d.spool.Len()))
		if err == nil {
			d.note(nil)
			backoff = 0
			continue
		}
		if ctx.Err() != nil {
			return
		}
		d.note(err)
		d.metrics.sendErrors.Inc()
		backoff = min(max(backoff*2, deliverMinBackoff), d.maxBackoff)
		attrs := append([]any{"err", err, "spooled", d.spool.Len(), "retry_in", backoff}, refusedToken(err, d.tokenFrom)...)
		d.log.Warn("cannot deliver facts; they stay spooled", attrs...)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
}

// note records the outcome of one delivery to the server, of facts or of
// the inventory: nil when the server took it.
func (d *deliverer) note(err error) { d.streak.note(err) }

// deliveryState is what /healthz says of the deliveries: the last one's
// error (nil after a success), since when they have failed in a row, and
// whether that is longer than the agent's patience.
func (d *deliverer) deliveryState() (err error, since time.Time, sustained bool) {
	return d.streak.state()
}

// deliveryTrouble says, for /healthz, that deliveries have failed for
// longer than the agent's patience and why.
func (d *deliverer) deliveryTrouble() string {
	return d.streak.trouble("cannot deliver to the server", "facts stay spooled", d.tokenFrom)
}

// flush sends one batch. A batch the server refuses as bad input (a 4xx
// other than auth, not found and rate limit) is resent fact by fact, so
// only the fact at fault is dropped and the others keep their order.
func (d *deliverer) flush(ctx context.Context) error {
	entries, bad := d.spool.Peek(deliverBatch)
	if bad > 0 {
		d.metrics.factsFailed.WithLabelValues("corrupt").Add(float64(bad))
		d.log.Error("dropped unreadable spool files", "files", bad, "dir", d.spool.dir)
	}
	if len(entries) == 0 {
		return nil
	}
	err := d.post(ctx, entries)
	if err == nil {
		return d.done(entries)
	}
	if !isRejection(err) {
		return err
	}
	for _, e := range entries {
		err := d.post(ctx, []SpoolEntry{e})
		switch {
		case err == nil:
			if err := d.done([]SpoolEntry{e}); err != nil {
				return err
			}
		case isRejection(err):
			d.metrics.factsFailed.WithLabelValues("rejected").Inc()
			d.log.Error("the server refused a fact; dropping it", "fact", e.Fact.FactID,
				"workload", e.Fact.WorkloadKey(), "err", err)
			if err := d.spool.Remove(e.Seq); err != nil {
				return err
			}
		default:
			return err
		}
	}
	return nil
}

func (d *deliverer) done(entries []SpoolEntry) error {
	seqs := make([]uint64, len(entries))
	for i, e := range entries {
		seqs[i] = e.Seq
	}
	if err := d.spool.Remove(seqs...); err != nil {
		return err
	}
	d.metrics.factsSent.Add(float64(len(entries)))
	return nil
}

// refusedToken is the log attribute that says where the agent's token
// came from (tokenFrom) when the server refused it: the server cannot tell
// a stale token from one read from the wrong place (an old variable left
// beside the file, another cluster's Secret), and the operator can. Every
// request the agent makes with the token logs it the same way. A 401 is a
// token the server does not know; a 403 that names no field is one it
// knows as another cluster's, and says so with a hint. On the facts path a
// 403 that names a field refuses a fact (one naming another cluster's
// release), not the token, and leaves the token out.
func refusedToken(err error, tokenFrom string) []any {
	se, ok := err.(*statusError)
	if !ok || tokenFrom == "" {
		return nil
	}
	switch {
	case se.Status == http.StatusUnauthorized:
		return []any{"token_from", tokenFrom}
	case se.Status == http.StatusForbidden && se.refusesToken():
		return []any{"token_from", tokenFrom, "hint", anotherClustersToken}
	}
	return nil
}

// anotherClustersToken is the hint logged beside a 403 that refuses the
// token: the server knows it, as another cluster's.
const anotherClustersToken = "the server knows this token as another cluster's (its answer says whose): the token read from " +
	"token_from is not this cluster's, or the agent's --cluster (RIPCORD_CLUSTER) names the wrong cluster"

// refusedActionsToken is refusedToken for the actions API (the long poll
// and an action's result), where every 403 refuses the token: it is
// another cluster's (the server says whose), read from the wrong place.
func refusedActionsToken(err error, tokenFrom string) []any {
	if se, ok := err.(*statusError); ok && se.Status == http.StatusForbidden && tokenFrom != "" {
		return []any{"token_from", tokenFrom, "hint", anotherClustersToken}
	}
	return refusedToken(err, tokenFrom)
}

// statusError is a non-2xx answer of the server.
type statusError struct {
	Status int
	Body   string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("server answered %d: %s", e.Status, e.Body)
}

// refusesToken reports whether the answer is the server's refusal of the
// token itself: an API error ({"error": ...}) that names no field, as the
// server's token check writes it. An answer that names a field refuses
// the request's content; one that is not the server's JSON (a proxy's page)
// says nothing of the token.
func (e *statusError) refusesToken() bool {
	var body struct {
		Error string `json:"error"`
		Field string `json:"field"`
	}
	return json.Unmarshal([]byte(e.Body), &body) == nil && body.Error != "" && body.Field == ""
}

// namesField reports whether the answer is the server's JSON error naming
// a field: it refuses what was sent (one fact, one result), not the token,
// and sending it again gets the same answer.
func (e *statusError) namesField() bool {
	var body struct {
		Field string `json:"field"`
	}
	return json.Unmarshal([]byte(e.Body), &body) == nil && body.Field != ""
}

// refusesFields reports whether the answer is the server's JSON error
// naming one of fields.
func (e *statusError) refusesFields(fields ...string) bool {
	var body struct {
		Field string `json:"field"`
	}
	if json.Unmarshal([]byte(e.Body), &body) != nil {
		return false
	}
	for _, f := range fields {
		if body.Field == f {
			return true
		}
	}
	return false
}

// isRejection: the server looked at the facts and will never take them as
// they are. 401 and a 403 that names no field (a token being rotated), 404
// (a server without this route yet), 408 and 429 may change, so they are
// retried; a 403 that names a field refuses a fact, as a 400 does.
func isRejection(err error) bool {
	se, ok := err.(*statusError)
	if !ok || se.Status < 400 || se.Status >= 500 {
		return false
	}
	return se.Status != http.StatusNotFound && !retryable4xx(se)
}

func (d *deliverer) post(ctx context.Context, entries []SpoolEntry) error {
	facts := make([]records.Fact, len(entries))
	for i, e := range entries {
		facts[i] = e.Fact
	}
	body, err := json.Marshal(map[string]any{"facts": facts})
	if err != nil {
		return fmt.Errorf("encode facts: %w", err)
	}
	return doJSON(ctx, d.http, d.token, http.MethodPost, d.url, body, nil)
}

// doJSON sends a request with the cluster's token and decodes a 2xx answer
// into out (when not nil); any other answer is a *statusError.
func doJSON(ctx context.Context, client *http.Client, token func() (string, error), method, u string, body []byte, out any) error {
	tok, err := token()
	if err != nil {
		return err
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("read the answer of %s %s: %w", method, u, err)
	}
	if resp.StatusCode/100 != 2 {
		return &statusError{Status: resp.StatusCode, Body: strings.TrimSpace(string(data))}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("decode the answer of %s %s: %w", method, u, err)
		}
	}
	return nil
}
