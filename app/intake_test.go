package app

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/payload"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/internal/testdb"
)

func TestIntakeStoresEveryGitHubPayload(t *testing.T) {
	t.Parallel()
	payloads := githubtest.Payloads(t)
	if len(payloads) < 89 {
		t.Fatalf("found %d example payloads in ../shared/github/webhooks, want 89", len(payloads))
	}
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServer(t, dbURL, Options{})
		type want struct{ event, action, repo string }
		wants := map[string]want{}
		for i, p := range payloads {
			id := fmt.Sprintf("delivery-%03d", i)
			var meta struct {
				Action     string `json:"action"`
				Repository *struct {
					FullName string `json:"full_name"`
				} `json:"repository"`
			}
			if err := json.Unmarshal(p.Body, &meta); err != nil {
				t.Fatalf("%s/%s: %v", p.Event, p.Name, err)
			}
			w := want{event: p.Event, action: meta.Action}
			if meta.Repository != nil {
				w.repo = meta.Repository.FullName
			}
			wants[id] = w
			if code, body := ts.deliver(t, p.Event, id, p.Body, githubtest.Sign(testSecret, p.Body)); code != 202 {
				t.Fatalf("%s/%s: status %d: %s", p.Event, p.Name, code, body)
			}
		}
		ts.waitSettled(t)
		for id, w := range wants {
			var d Delivery
			if code := ts.api(t, "/api/v1/deliveries/"+id, &d); code != 200 {
				t.Fatalf("GET delivery %s: %d", id, code)
			}
			if d.Event != w.event || d.Action != w.action || d.Repository != w.repo {
				t.Errorf("%s stored as (%q, %q, %q), want (%q, %q, %q)", id, d.Event, d.Action, d.Repository, w.event, w.action, w.repo)
			}
			if d.State != DeliveryProcessed && d.State != DeliveryIgnored {
				t.Errorf("%s (%s) ended %q (%s), want processed or ignored", id, w.event, d.State, d.LastError)
			}
		}
	})
}

func TestIntakeRefusesAndStoresNothing(t *testing.T) {
	t.Parallel()
	body := githubtest.LoadPayload(t, "workflow_run", "completed.payload.json")
	good := githubtest.Sign(testSecret, body)
	cases := []struct {
		name, id, signature string
		body                []byte
		want                int
	}{
		{"signed with a secret the server does not have", "d1", githubtest.Sign("not the secret", body), body, 401},
		{"no signature header", "d2", "", body, 401},
		{"signature of another body", "d3", githubtest.Sign(testSecret, body[:len(body)-1]), body, 401},
		{"sha1 scheme instead of sha256", "d4", "sha1=" + good[len("sha256="):], body, 401},
		{"truncated JSON, correctly signed", "d5", githubtest.Sign(testSecret, body[:len(body)/2]), body[:len(body)/2], 400},
		{"no delivery id", "", good, body, 400},
	}
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServer(t, dbURL, Options{})
		for _, c := range cases {
			code, resp := ts.deliver(t, "workflow_run", c.id, c.body, c.signature)
			if code != c.want {
				t.Errorf("%s: status %d (%s), want %d", c.name, code, resp, c.want)
			}
		}
		if n := ts.countDeliveries(t); n != 0 {
			t.Errorf("%d deliveries stored after only refused requests, want 0", n)
		}
	})
}

func TestIntakeAcceptsEverySecretDuringRotation(t *testing.T) {
	t.Parallel()
	body := []byte(`{"zen":"Keep it logically awesome.","hook_id":1}`)
	ts := startServer(t, testdb.MigratedURL(t, "sqlite"), Options{})
	for i, secret := range []string{"old-secret", testSecret} {
		if code, resp := ts.deliver(t, "ping", fmt.Sprintf("rot-%d", i), body, githubtest.Sign(secret, body)); code != 202 {
			t.Errorf("delivery signed with secret %d: status %d (%s), want 202", i, code, resp)
		}
	}
}

func TestRedeliveryIsAcknowledgedAndProcessedOnce(t *testing.T) {
	t.Parallel()
	body := githubtest.LoadPayload(t, "installation", "created.payload.json")
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServer(t, dbURL, Options{})
		var statuses []string
		for range 3 {
			code, resp := ts.deliver(t, "installation", "same-guid", body, githubtest.Sign(testSecret, body))
			if code != 202 {
				t.Fatalf("status %d: %s", code, resp)
			}
			var ack struct{ Status string }
			_ = json.Unmarshal([]byte(resp), &ack)
			statuses = append(statuses, ack.Status)
		}
		if fmt.Sprint(statuses) != "[queued duplicate duplicate]" {
			t.Errorf("acknowledgements %v, want [queued duplicate duplicate]", statuses)
		}
		ts.waitSettled(t)
		var processed int
		if err := ts.db.Read.QueryRowContext(context.Background(),
			`SELECT processed_count FROM deliveries WHERE id = 'same-guid'`).Scan(&processed); err != nil {
			t.Fatal(err)
		}
		if processed != 1 {
			t.Errorf("delivery processed %d times, want 1", processed)
		}
	})
}

// A delivery of an event no capability acts on is stored finished,
// ignored, and answered so: the drain never has to mark it. One that a
// handler takes is queued for the drain.
func TestIntakeStoresAnEventNoOneActsOnIgnored(t *testing.T) {
	t.Parallel()
	ping := githubtest.LoadPayload(t, "ping", "payload.json")
	installation := githubtest.LoadPayload(t, "installation", "created.payload.json")
	// The gates act on check_suite rerequested alone; the requested and
	// completed suites GitHub sends for every push are no job's business.
	requested := githubtest.LoadPayload(t, "check_suite", "requested.payload.json")
	completed := githubtest.LoadPayload(t, "check_suite", "completed.payload.json")
	rerequested := githubtest.LoadPayload(t, "check_suite", "rerequested.payload.json")
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServer(t, dbURL, Options{})
		ts.drain.Stop(context.Background()) // what is queued stays queued
		for _, c := range []struct {
			event, id string
			body      []byte
			status    string
		}{{"ping", "p1", ping, "ignored"}, {"installation", "i1", installation, "queued"}, {"ping", "p1", ping, "duplicate"},
			{"check_suite", "s1", requested, "ignored"}, {"check_suite", "s2", completed, "ignored"},
			{"check_suite", "s3", rerequested, "queued"}} {
			code, resp := ts.deliver(t, c.event, c.id, c.body, githubtest.Sign(testSecret, c.body))
			var ack struct{ Status string }
			_ = json.Unmarshal([]byte(resp), &ack)
			if code != 202 || ack.Status != c.status {
				t.Errorf("%s %s: %d %s, want 202 with status %s", c.event, c.id, code, resp, c.status)
			}
		}
		if d := ts.delivery(t, "p1"); d.State != DeliveryIgnored || d.Attempts != 0 || d.ProcessedAt == nil {
			t.Errorf("ping stored %s after %d attempts, finished at %v; want ignored at once", d.State, d.Attempts, d.ProcessedAt)
		}
		if d := ts.delivery(t, "i1"); d.State != DeliveryQueued {
			t.Errorf("installation stored %s, want queued for the drain", d.State)
		}
		if q := ts.countQueued(t); q != 2 {
			t.Errorf("%d deliveries queued, want the installation and the suite rerequested", q)
		}
		resp, err := http.Get(ts.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		metrics, _ := io.ReadAll(resp.Body)
		if want := `ripcord_deliveries_processed_total{event="ping",outcome="ignored"} 1`; !bytes.Contains(metrics, []byte(want)) {
			t.Errorf("/metrics has no %s", want)
		}
	})
}

// postHook sends a webhook request with exactly the given headers.
func (ts *testServer) postHook(t *testing.T, headers map[string]string, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/api/github/hook", bytes.NewReader(body))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("post delivery: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The signature is checked as the dispatcher reads the body, so every way
// the dispatcher can refuse or skip a request must still answer an
// unsigned one 401, and a signed form-encoded delivery must be stored.
func TestIntakeChecksTheSignatureOnEveryPath(t *testing.T) {
	t.Parallel()
	body := githubtest.LoadPayload(t, "ping", "payload.json")
	form := []byte("payload=" + url.QueryEscape(string(body)))
	wrong := githubtest.Sign("not the secret", body)
	headers := func(event, id, contentType, sig string) map[string]string {
		return map[string]string{"X-GitHub-Event": event, "X-GitHub-Delivery": id, "Content-Type": contentType, "X-Hub-Signature-256": sig}
	}
	cases := []struct {
		name    string
		headers map[string]string
		body    []byte
		want    int
	}{
		{"an event ripcord does not list, wrongly signed", headers("not_an_event", "s1", "application/json", wrong), body, 401},
		{"an event ripcord does not list, signed (stored ignored)", headers("not_an_event", "s2", "application/json", githubtest.Sign(testSecret, body)), body, 202},
		{"an unsupported content type, wrongly signed", headers("ping", "s3", "text/plain", wrong), body, 401},
		{"an unsupported content type, signed", headers("ping", "s4", "text/plain", githubtest.Sign(testSecret, body)), body, 400},
		{"no event header, wrongly signed", headers("", "s5", "application/json", wrong), body, 401},
		{"a form-encoded delivery, signed over the form", headers("ping", "s6", "application/x-www-form-urlencoded", githubtest.Sign(testSecret, form)), form, 202},
		{"a form-encoded delivery, signed over the JSON inside", headers("ping", "s7", "application/x-www-form-urlencoded", githubtest.Sign(testSecret, body)), form, 401},
	}
	ts := startServer(t, testdb.MigratedURL(t, "sqlite"), Options{})
	for _, c := range cases {
		if code, resp := ts.postHook(t, c.headers, c.body); code != c.want {
			t.Errorf("%s: status %d (%s), want %d", c.name, code, resp, c.want)
		}
	}
	// Stored: the signed delivery of an event ripcord does not list
	// (ignored) and the signed form-encoded one; nothing else.
	if n := ts.countDeliveries(t); n != 2 {
		t.Fatalf("%d deliveries stored, want the two signed ones (s2 and s6)", n)
	}
	if d := ts.delivery(t, "s2"); d.Event != "not_an_event" || d.State != DeliveryIgnored {
		t.Errorf("the signed delivery of an unlisted event stored as %q, %s; want not_an_event, ignored", d.Event, d.State)
	}
	if d := ts.delivery(t, "s6"); d.Event != "ping" {
		t.Errorf("form-encoded delivery stored as event %q, want ping", d.Event)
	}
}

// Every valid delivery is stored before its 202, also of an event
// ripcord does not list (GitHub adds events): it is stored finished,
// ignored, with its columns, answered so, and never queued for the
// drain. A redelivery of it is a duplicate; one wrongly signed or
// malformed is refused and stores nothing.
func TestIntakeStoresAnUnlistedEventIgnored(t *testing.T) {
	t.Parallel()
	body := githubtest.LoadPayload(t, "pull_request", "opened.payload.json")
	const event = "an_event_github_adds_later"
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServer(t, dbURL, Options{})
		ts.drain.Stop(context.Background()) // anything queued would stay queued
		for _, c := range []struct {
			id, sig string
			body    []byte
			code    int
			status  string
		}{
			{"u1", githubtest.Sign(testSecret, body), body, 202, "ignored"},
			{"u1", githubtest.Sign(testSecret, body), body, 202, "duplicate"},
			{"u2", githubtest.Sign("not the secret", body), body, 401, ""},
			{"u3", githubtest.Sign(testSecret, body[:10]), body[:10], 400, ""},
		} {
			code, resp := ts.deliver(t, event, c.id, c.body, c.sig)
			var ack struct{ Status string }
			_ = json.Unmarshal([]byte(resp), &ack)
			if code != c.code || ack.Status != c.status {
				t.Errorf("%s: %d %s, want %d with status %q", c.id, code, resp, c.code, c.status)
			}
		}
		if n := ts.countDeliveries(t); n != 1 {
			t.Fatalf("%d deliveries stored, want u1 alone", n)
		}
		d := ts.delivery(t, "u1")
		if d.Event != event || d.Action != "opened" || d.Repository == "" || d.InstallationID == 0 {
			t.Errorf("stored as event %q, action %q, repository %q, installation %d; want the payload's", d.Event, d.Action, d.Repository, d.InstallationID)
		}
		if d.State != DeliveryIgnored || d.Attempts != 0 || d.ProcessedAt == nil {
			t.Errorf("stored %s after %d attempts, finished at %v; want ignored at once", d.State, d.Attempts, d.ProcessedAt)
		}
		if q := ts.countQueued(t); q != 0 {
			t.Errorf("%d deliveries queued, want none", q)
		}
	})
}

func TestIntakeRefusesAPayloadOverGitHubsCap(t *testing.T) {
	t.Parallel()
	body := bytes.Repeat([]byte(" "), maxPayloadBytes+1)
	ts := startServer(t, testdb.MigratedURL(t, "sqlite"), Options{})
	code, resp := ts.deliver(t, "ping", "huge", body, githubtest.Sign(testSecret, body))
	if code != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d (%s), want 413", code, resp)
	}
	if n := ts.countDeliveries(t); n != 0 {
		t.Errorf("%d deliveries stored, want 0", n)
	}
}

// bodyRecorder fails a delivery's first attempt, so the second comes from
// the retry job, and keeps the payload each attempt was given.
type bodyRecorder struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (h *bodyRecorder) Handles() []string { return []string{"check_suite"} }
func (h *bodyRecorder) Handle(_ context.Context, d Delivery) (Commit, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.bodies = append(h.bodies, d.Body)
	if len(h.bodies) == 1 {
		return nil, errors.New("first attempt fails")
	}
	return func(context.Context, *sql.Tx) error { return nil }, nil
}

// A payload is stored packed (internal/payload), and the drain and the
// retry job both hand the handlers the payload exactly as GitHub sent it.
func TestPayloadsAreStoredPackedAndReadBackAsSent(t *testing.T) {
	t.Parallel()
	body := githubtest.LoadPayload(t, "check_suite", "completed.payload.json")
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		h := &bodyRecorder{}
		ts := startServer(t, dbURL, Options{Handlers: []EventHandler{h}, RetryBase: time.Millisecond})
		if code, resp := ts.deliver(t, "check_suite", "packed-1", body, githubtest.Sign(testSecret, body)); code != 202 {
			t.Fatalf("status %d: %s", code, resp)
		}
		waitFor(t, "the retry to process the delivery", 30*time.Second, func() bool {
			return ts.delivery(t, "packed-1").State == DeliveryProcessed
		})
		query := `SELECT body FROM deliveries WHERE id = 'packed-1'`
		if ts.db.Dialect == store.SQLite {
			query = `SELECT b.body FROM deliveries d JOIN delivery_bodies b ON b.seq = d.seq WHERE d.id = 'packed-1'`
		}
		var stored []byte
		if err := ts.db.Read.QueryRow(query).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if !payload.Packed(stored) || len(stored) >= len(body)/2 {
			t.Errorf("a %d-byte payload is stored in %d bytes (packed: %v), want packed to under half", len(body), len(stored), payload.Packed(stored))
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.bodies) != 2 {
			t.Fatalf("the handler was called %d times, want 2 (drain, then retry)", len(h.bodies))
		}
		for i, got := range h.bodies {
			if !bytes.Equal(got, body) {
				t.Errorf("attempt %d was handed %d bytes that differ from the %d GitHub sent", i+1, len(got), len(body))
			}
		}
	})
}

// Payloads are packed into reused buffers (groupWriter's packBuffers):
// many deliveries at once, in many batches, must each be stored exactly as
// it was sent, none with another's bytes.
func TestConcurrentDeliveriesAreStoredByteForByte(t *testing.T) {
	t.Parallel()
	payloads := githubtest.Payloads(t)
	testdb.EachMigrated(t, func(t *testing.T, dbURL string) {
		ts := startServer(t, dbURL, Options{})
		var wg sync.WaitGroup
		for i, p := range payloads {
			wg.Go(func() {
				id := fmt.Sprintf("conc-%03d", i)
				if code, resp := ts.deliver(t, p.Event, id, p.Body, githubtest.Sign(testSecret, p.Body)); code != 202 {
					t.Errorf("%s/%s: %d %s", p.Event, p.Name, code, resp)
				}
			})
		}
		wg.Wait()
		query := `SELECT body FROM deliveries WHERE id = $1`
		if ts.db.Dialect == store.SQLite {
			query = `SELECT b.body FROM deliveries d JOIN delivery_bodies b ON b.seq = d.seq WHERE d.id = $1`
		}
		for i, p := range payloads {
			var stored []byte
			if err := ts.db.Read.QueryRow(query, fmt.Sprintf("conc-%03d", i)).Scan(&stored); err != nil {
				t.Fatal(err)
			}
			got, err := payload.Unpack(stored)
			if err != nil || !bytes.Equal(got, p.Body) {
				t.Errorf("%s/%s: stored payload differs from the one sent (%d bytes, %v)", p.Event, p.Name, len(got), err)
			}
		}
	})
}

// ripcord_webhook_deliveries_total counts what the intake stored, not only
// what it refused: the operator's view of how many deliveries arrive.
func TestIntakeCountsAcceptedAndDuplicateDeliveries(t *testing.T) {
	t.Parallel()
	ping := githubtest.LoadPayload(t, "ping", "payload.json")
	ts := startServer(t, testdb.MigratedURL(t, "sqlite"), Options{})
	for _, id := range []string{"m1", "m1", "m2"} {
		if code, resp := ts.deliver(t, "ping", id, ping, githubtest.Sign(testSecret, ping)); code != 202 {
			t.Fatalf("delivery %s: %d %s", id, code, resp)
		}
	}
	ts.deliver(t, "ping", "m3", ping, githubtest.Sign("not the secret", ping))
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	metrics, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`ripcord_webhook_deliveries_total{event="ping",outcome="accepted"} 2`,
		`ripcord_webhook_deliveries_total{event="ping",outcome="duplicate"} 1`,
		`ripcord_webhook_deliveries_total{event="ping",outcome="bad_signature"} 1`,
	} {
		if !bytes.Contains(metrics, []byte(want)) {
			t.Errorf("/metrics has no %s", want)
		}
	}
}

// A delivery not sent as JSON is refused with what to set, not with "not
// valid JSON": curl's --data sends a form, and a form's JSON is read from
// its field "payload" (as GitHub sends form deliveries, which are stored).
// A JSON delivery that is broken is still told only that.
func TestIntakeSaysToSendJSONWhenTheContentTypeIsNot(t *testing.T) {
	t.Parallel()
	body := githubtest.LoadPayload(t, "workflow_run", "completed.payload.json")
	form := []byte("payload=" + url.QueryEscape(string(body)))
	headers := func(id, contentType string, signed []byte) map[string]string {
		h := map[string]string{"X-GitHub-Event": "workflow_run", "X-GitHub-Delivery": id, "X-Hub-Signature-256": githubtest.Sign(testSecret, signed)}
		if contentType != "" {
			h["Content-Type"] = contentType
		}
		return h
	}
	const fix = "Content-Type: application/json"
	cases := []struct {
		name    string
		headers map[string]string
		body    []byte
		want    []string // what the refusal says
	}{
		{"JSON sent as a form (curl --data)", headers("c1", "application/x-www-form-urlencoded", body), body, []string{"form field payload", fix}},
		{"a form whose payload is not JSON", headers("c2", "application/x-www-form-urlencoded; charset=utf-8", []byte("payload=%7Bnope")), []byte("payload=%7Bnope"), []string{"form field payload", fix}},
		{"a form that cannot be parsed", headers("c3", "application/x-www-form-urlencoded", []byte("payload=%zz")), []byte("payload=%zz"), []string{"form body cannot be read", fix}},
		{"text/plain", headers("c4", "text/plain", body), body, []string{`unsupported Content-Type "text/plain"`, fix}},
		{"no Content-Type", headers("c5", "", body), body, []string{"missing or malformed Content-Type", fix}},
	}
	ts := startServer(t, testdb.MigratedURL(t, "sqlite"), Options{})
	for _, c := range cases {
		code, resp := ts.postHook(t, c.headers, c.body)
		var refusal struct{ Error string }
		if err := json.Unmarshal([]byte(resp), &refusal); code != 400 || err != nil {
			t.Errorf("%s: status %d (%s), want 400 with an error", c.name, code, resp)
		}
		for _, want := range c.want {
			if !strings.Contains(refusal.Error, want) {
				t.Errorf("%s: the refusal does not say %q: %s", c.name, want, resp)
			}
		}
	}
	truncated := body[:len(body)/2]
	code, resp := ts.postHook(t, headers("c6", "application/json", truncated), truncated)
	if code != 400 || !strings.Contains(resp, "payload is not valid JSON") || strings.Contains(resp, fix) {
		t.Errorf("truncated JSON: status %d (%s), want 400 saying only that it is not valid JSON", code, resp)
	}
	if n := ts.countDeliveries(t); n != 0 {
		t.Fatalf("%d deliveries stored after only refused requests, want 0", n)
	}
	// GitHub's own form delivery, signed over the form as it is sent, is
	// stored with the columns read from the JSON in its field.
	if code, resp := ts.postHook(t, headers("c7", "application/x-www-form-urlencoded", form), form); code != 202 {
		t.Fatalf("GitHub's form delivery: status %d (%s), want 202", code, resp)
	}
	var meta struct {
		Repository struct {
			FullName string `json:"full_name"`
		}
	}
	if err := json.Unmarshal(body, &meta); err != nil || meta.Repository.FullName == "" {
		t.Fatalf("the example payload names no repository: %v", err)
	}
	if d := ts.delivery(t, "c7"); d.Event != "workflow_run" || d.Repository != meta.Repository.FullName {
		t.Errorf("GitHub's form delivery stored as %q of %q, want workflow_run of %q", d.Event, d.Repository, meta.Repository.FullName)
	}
}
