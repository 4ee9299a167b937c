package health

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/rollout"
)

// A gate's reasons go into the ripcord/rollout check run, which whoever
// reads the repository sees. An answer of Prometheus or Alertmanager that
// was not their API's had its first 200 bytes quoted there: a proxy's
// login page, an error naming internal hosts, text mentioning a team. The
// reason now says the status, the media type and the size, and the
// excerpt goes to the server's log only.
func TestAnUnexpectedAnswerIsDescribedNotQuoted(t *testing.T) {
	const secret = `<html>Sign in to corp-proxy.internal.example, @acme/security | see ` + "`" + `</html>`
	size := fmt.Sprintf("%d bytes", len(secret))
	serve := func(status int, ct string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ct)
			w.WriteHeader(status)
			w.Write([]byte(secret))
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	tests := []struct {
		name   string
		reader func(url string) Reader
		status int
		ct     string
		want   string
	}{
		{"Prometheus answers a page", func(u string) Reader {
			return Reader{PrometheusURL: u, Health: &rollout.Health{
				Metrics: []rollout.Metric{{Name: "error-rate", Query: errorRate, Max: ptr(0.01)}}}}
		}, http.StatusOK, "text/html; charset=utf-8",
			"metric error-rate (us-1/us-1a): the answer from Prometheus is not an API response: 200 OK, text/html, " + size + "; ripcord's log has an excerpt"},
		{"Alertmanager answers an error", func(u string) Reader {
			return Reader{AlertmanagerURL: u, Health: &rollout.Health{Alerts: &rollout.Alerts{BlockOn: []string{"severity=critical"}}}}
		}, http.StatusBadGateway, "text/html",
			"alerts: the Alertmanager API answered 502 Bad Gateway, text/html, " + size + "; ripcord's log has an excerpt"},
		{"a content type that is text of its own is not repeated", func(u string) Reader {
			return Reader{AlertmanagerURL: u, Health: &rollout.Health{Alerts: &rollout.Alerts{BlockOn: []string{"severity=critical"}}}}
		}, http.StatusServiceUnavailable, "text/`@acme`",
			"the Alertmanager API answered 503 Service Unavailable, an unreadable content type, " + size + ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			r := tt.reader(serve(tt.status, tt.ct).URL)
			r.Log = slog.New(slog.NewTextHandler(&log, nil))
			got := r.Read(context.Background(), usA, readAt)
			reasons := strings.Join(got.Reasons, "\n")
			if got.Green || !strings.Contains(reasons, tt.want) {
				t.Errorf("green %v, reasons %q; want red with …%s…", got.Green, reasons, tt.want)
			}
			for _, leak := range []string{"corp-proxy", "@acme", "Sign in", "`"} {
				if strings.Contains(reasons, leak) {
					t.Errorf("the reasons %q quote the upstream's %q", reasons, leak)
				}
			}
			if !strings.Contains(log.String(), "corp-proxy.internal.example") {
				t.Errorf("the server's log has no excerpt of the answer: %s", log.String())
			}
		})
	}
}
