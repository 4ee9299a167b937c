package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
	"github.com/tidwall/gjson"

	"github.com/ripcord/ripcord/internal/jsonvalid"
	"github.com/ripcord/ripcord/internal/store"
)

// maxPayloadBytes is GitHub's own cap on a webhook payload.
const maxPayloadBytes = 25 << 20

// intake is POST /api/github/hook: it checks the signature against every
// configured secret, lets go-githubapp's dispatcher parse the delivery, and
// stores it durably (durableScheduler) before answering 202. No work happens
// on the request path.
type intake struct {
	writer     *groupWriter
	secrets    func() []string
	dispatcher http.Handler
	metrics    *metrics
	log        *slog.Logger
}

func newIntake(secrets func() []string, w *groupWriter, m *metrics, log *slog.Logger) *intake {
	in := &intake{writer: w, secrets: secrets, metrics: m, log: log}
	in.dispatcher = in.dispatcherFor(webhookEvents)
	return in
}

// dispatcherFor is go-githubapp's dispatcher that hands deliveries of the
// given events to the durable scheduler.
func (in *intake) dispatcherFor(events []string) http.Handler {
	return githubapp.NewEventDispatcher(
		[]githubapp.EventHandler{storeAll(events)},
		"", // the signature was checked before, against several secrets
		githubapp.WithScheduler(&durableScheduler{writer: in.writer, metrics: in.metrics}),
		githubapp.WithErrorCallback(in.onError),
		githubapp.WithResponseCallback(in.onResponse),
	)
}

func (in *intake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	event := r.Header.Get("X-GitHub-Event")
	secrets := in.secrets()
	if len(secrets) == 0 {
		in.refuse(w, event, "bad_signature", http.StatusUnauthorized,
			"no webhook secret is configured: register the App at /setup or set github.webhook_secrets (RIPCORD_GITHUB_WEBHOOK_SECRET)")
		return
	}
	sig, ok := parseSignature(r.Header.Get("X-Hub-Signature-256"))
	if !ok {
		in.refuse(w, event, "bad_signature", http.StatusUnauthorized, errBadSignature.Error())
		return
	}
	if r.Header.Get("X-GitHub-Delivery") == "" {
		in.refuse(w, event, "bad_payload", http.StatusBadRequest, "missing X-GitHub-Delivery header")
		return
	}
	// The body is hashed as the dispatcher reads it, and the signature is
	// checked before anything is stored or answered (signedBody): reading it
	// here first would copy every payload once more.
	body := newSignedBody(http.MaxBytesReader(w, r.Body, maxPayloadBytes), secrets, sig)
	r.Body = body
	// From here the delivery is on its way to the group commit, which
	// waits a little for it; it arrives when the scheduler hands it over,
	// or never if it is refused.
	body.arrived = in.writer.expect()
	defer body.arrived()
	// go-github would check the header again against the dispatcher's single
	// (empty) secret and fail.
	r.Header.Del("X-Hub-Signature-256")
	r.Header.Del("X-Hub-Signature")
	dispatcher := in.dispatcher
	if event != "" && !listedEvents[event] {
		// An event GitHub sends that ripcord does not list (GitHub adds
		// events) is stored too, ignored, like any other valid delivery:
		// the dispatcher only schedules the events it was given, so this
		// one gets a dispatcher of its own. Only such deliveries pay for it.
		dispatcher = in.dispatcherFor([]string{event})
	}
	dispatcher.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), signedBodyKey{}, body)))
}

func (in *intake) refuse(w http.ResponseWriter, event, outcome string, status int, msg string) {
	in.metrics.deliveries.WithLabelValues(eventLabel(event), outcome).Inc()
	writeError(w, status, "", msg)
}

func (in *intake) onError(w http.ResponseWriter, r *http.Request, err error) {
	event := r.Header.Get("X-GitHub-Event")
	// go-githubapp's ValidationError does not unwrap its cause: the body
	// itself says whether it was cut off at the cap.
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) || errors.As(verifyRequest(r), &tooLarge) {
		in.refuse(w, event, "bad_payload", http.StatusRequestEntityTooLarge, "payload larger than 25 MiB")
		return
	}
	// A payload the dispatcher refused may not be GitHub's at all: an
	// unsigned request learns nothing more than "unauthorized".
	if errors.Is(err, errBadSignature) || verifyRequest(r) != nil {
		in.refuse(w, event, "bad_signature", http.StatusUnauthorized, errBadSignature.Error())
		return
	}
	var ve githubapp.ValidationError
	if errors.As(err, &ve) {
		in.refuse(w, event, "bad_payload", http.StatusBadRequest, payloadProblem(r, ve.Cause))
		return
	}
	if store.Unavailable(err) {
		// The outage is logged once (dbhealth.go), not once per delivery.
		in.log.Debug("store webhook delivery: the database is unavailable", "delivery", r.Header.Get("X-GitHub-Delivery"), "event", event, "err", err)
		in.refuse(w, event, "error", http.StatusServiceUnavailable, "the database is unavailable: the delivery was not stored; ask GitHub to redeliver it")
		return
	}
	in.log.Error("store webhook delivery", "delivery", r.Header.Get("X-GitHub-Delivery"), "event", event, "err", err)
	in.refuse(w, event, "error", http.StatusServiceUnavailable, "could not store the delivery; ask GitHub to redeliver it")
}

// onResponse answers 202 for every stored delivery (the responder set by the
// scheduler says whether it was a redelivery). Every event is scheduled
// (ServeHTTP); should one not be, its signature is checked here all the same.
func (in *intake) onResponse(w http.ResponseWriter, r *http.Request, event string, handled bool) {
	if res := githubapp.GetResponder(r.Context()); res != nil {
		res(w, r)
		return
	}
	if err := verifyRequest(r); err != nil {
		in.refuse(w, event, "bad_signature", http.StatusUnauthorized, errBadSignature.Error())
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// storeAll is registered for its events so the dispatcher hands each one to
// the durable scheduler; its Handle is never called on the request path.
type storeAll []string

func (s storeAll) Handles() []string { return s }
func (storeAll) Handle(context.Context, string, string, []byte) error {
	return errors.New("intake: deliveries are handled by the job queue")
}

// durableScheduler is go-githubapp's Scheduler that, instead of running the
// handler, writes the delivery and its job durably and returns once committed.
type durableScheduler struct {
	writer  *groupWriter
	metrics *metrics
}

func (s *durableScheduler) Schedule(ctx context.Context, d githubapp.Dispatch) error {
	if err := verifyContext(ctx); err != nil {
		return err
	}
	meta, err := parseMeta(d.Payload)
	if err != nil {
		return githubapp.ValidationError{EventType: d.EventType, DeliveryID: d.DeliveryID, Cause: err}
	}
	del := Delivery{
		ID:             d.DeliveryID,
		Event:          d.EventType,
		Action:         meta.Action,
		InstallationID: meta.InstallationID,
		Repository:     meta.Repository,
		Body:           d.Payload,
		ReceivedAt:     time.Now().UTC(),
	}
	if b, ok := ctx.Value(signedBodyKey{}).(*signedBody); ok && b.arrived != nil {
		b.arrived()
	}
	inserted, state, err := s.writer.Write(ctx, del)
	if err != nil {
		return err
	}
	outcome := "accepted"
	if !inserted {
		outcome = "duplicate"
	}
	s.metrics.deliveries.WithLabelValues(eventLabel(del.Event), outcome).Inc()
	githubapp.SetResponder(ctx, func(w http.ResponseWriter, r *http.Request) {
		status := state // queued, or ignored: no capability acts on the event
		if !inserted {
			status = "duplicate"
		}
		writeAck(w, del.ID, status)
	})
	return nil
}

// ack is the answer to a delivery stored.
type ack struct {
	Delivery string `json:"delivery"`
	Status   string `json:"status"`
}

var jsonContentType = []string{"application/json"}

// writeAck answers 202 with the ack on one line: GitHub keeps the answer
// for the delivery log, nobody reads it indented, and at thousands of
// deliveries a second the indenting encoder cost 2 % of the CPU.
func writeAck(w http.ResponseWriter, id, status string) {
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write(ackJSON(id, status))
}

// ackJSON is the ack as json.Marshal writes it, and a newline. GitHub's
// delivery ids are GUIDs, which JSON writes as they are: those are copied
// without encoding/json's reflection, anything else goes through it.
func ackJSON(id, status string) []byte {
	if !plainJSON(id) || !plainJSON(status) {
		b, _ := json.Marshal(ack{Delivery: id, Status: status}) // two strings: cannot fail
		return append(b, '\n')
	}
	b := make([]byte, 0, len(`{"delivery":"","status":""}`)+len(id)+len(status)+1)
	b = append(b, `{"delivery":"`...)
	b = append(b, id...)
	b = append(b, `","status":"`...)
	b = append(b, status...)
	return append(b, "\"}\n"...)
}

// plainJSON reports whether json.Marshal writes s between its quotes as it
// is: printable ASCII without the quote, the backslash or the characters it
// escapes for HTML.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

var errNotJSON = errors.New("payload is not valid JSON")

// payloadProblem is the answer to a signed delivery whose payload could
// not be read. One that was not sent as JSON says how to send it: curl's
// --data sends a form (Content-Type: application/x-www-form-urlencoded),
// whose JSON GitHub puts in the field "payload" and go-github reads from
// there, so JSON sent as a form was answered "not valid JSON" and sent
// people looking for a JSON problem. Only refused deliveries get here.
func payloadProblem(r *http.Request, cause error) string {
	if r.Header.Get("X-GitHub-Event") == "" {
		// Refused before the body was read, and by now known to be signed:
		// go-githubapp's words, "missing event type", named no header to a
		// person posting a delivery by hand.
		return "missing X-GitHub-Event header: GitHub names the event there (curl: -H 'X-GitHub-Event: ping')"
	}
	const fix = "send the JSON itself with Content-Type: application/json, the content type to choose in the webhook's settings (curl: -H 'Content-Type: application/json')"
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mediaType {
	case "application/json":
		return cause.Error()
	case "application/x-www-form-urlencoded":
		if errors.Is(cause, errNotJSON) {
			return "the form field payload is missing or not valid JSON (a form-encoded delivery carries its JSON there, as GitHub sends it): " + fix
		}
		return "the form body cannot be read (" + cause.Error() + "): " + fix
	case "":
		return "missing or malformed Content-Type: " + fix
	default:
		return fmt.Sprintf("unsupported Content-Type %q: %s", mediaType, fix)
	}
}

// payloadMeta is the part of every payload the intake stores in columns.
type payloadMeta struct {
	Action         string
	InstallationID int64
	Repository     string
}

// metaKeys are the top-level keys parseMeta reads its columns from.
var metaKeys = []string{"action", "installation", "repository"}

// parseMeta validates the payload and reads the three columns in one pass:
// jsonvalid, which agrees with encoding/json and is faster than gjson's
// or encoding/json's validator on GitHub's payloads (intake_bench_test.go),
// hands back the top-level values the columns come from, and gjson reads
// the columns from those small parts (a search of the whole payload per
// column took as long as the validation). GitHub writes these keys plainly;
// one written with escapes is not read.
func parseMeta(payload []byte) (payloadMeta, error) {
	var values [3][]byte
	if !jsonvalid.ValidFields(payload, metaKeys, values[:]) {
		return payloadMeta{}, errNotJSON
	}
	return payloadMeta{
		Action:         gjson.ParseBytes(values[0]).String(),
		InstallationID: gjson.GetBytes(values[1], "id").Int(),
		Repository:     gjson.GetBytes(values[2], "full_name").String(),
	}, nil
}

// eventLabel bounds the metric's label values to known events.
func eventLabel(event string) string {
	for _, e := range webhookEvents {
		if e == event {
			return e
		}
	}
	return "other"
}
