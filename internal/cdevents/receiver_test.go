package cdevents

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/cdevents/sdk-go/pkg/api"
	v05 "github.com/cdevents/sdk-go/pkg/api/v05"
	cloudevents "github.com/cloudevents/sdk-go/v2"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
)

// received is one delivery as a CDEvents consumer sees it.
type received struct {
	contentType string
	ce          cloudevents.Event
	cd          api.CDEventV04
}

// sink is a loopback CloudEvents receiver that parses every delivery the
// way a consumer would: the CloudEvents SDK reads the HTTP message, the
// CDEvents SDK reads the data and validates it against the 0.5.1 schema.
// A delivery that fails either is answered 400 and fails the test.
type sink struct {
	URL  string
	mu   sync.Mutex
	got  []received
	fail func(w http.ResponseWriter) bool
}

func newSink(t *testing.T) *sink {
	t.Helper()
	s := &sink{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.fail != nil && s.fail(w) {
			return
		}
		ce, err := cehttp.NewEventFromHTTPRequest(r)
		if err != nil {
			t.Errorf("sink: not a CloudEvent: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		cd, err := v05.NewFromJsonBytes(ce.Data())
		if err != nil {
			t.Errorf("sink: data is not a CDEvent: %v\n%s", err, ce.Data())
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := api.Validate(cd); err != nil {
			t.Errorf("sink: CDEvent fails the spec's validation: %v\n%s", err, ce.Data())
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.got = append(s.got, received{contentType: r.Header.Get("Content-Type"), ce: *ce, cd: cd})
		s.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func (s *sink) events() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.got...)
}
