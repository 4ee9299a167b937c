package health

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ripcord/ripcord/internal/outbound"
	"github.com/ripcord/ripcord/rollout"
)

// DefaultTimeout bounds each HTTP request of a reading that has no deadline
// of its own, so one target that never answers cannot stall the gate.
const DefaultTimeout = 10 * time.Second

// Reader takes the server's readings of the gate: probes with from: server,
// Prometheus metrics and Alertmanager alerts. Probes with from: runners are
// not its job; their results come back through FromRunnerProbes.
type Reader struct {
	// HTTP sends the requests; nil: outbound.Client(nil), the client for
	// repository-chosen URLs under the default rules.
	HTTP            *http.Client
	PrometheusURL   string
	AlertmanagerURL string
	Health          *rollout.Health // with defaults filled, as in rollout.Plan
	// Timeout bounds each request (default DefaultTimeout).
	Timeout time.Duration
	// Log receives what the gate's reasons leave out: an excerpt of an
	// answer of Prometheus or Alertmanager that is not their API's (nil:
	// slog.Default()).
	Log *slog.Logger
}

// Read takes one reading of the scope at the instant at: metrics are
// queried at that time, so a reading replayed after a restart asks the same
// question. A check that cannot be read is red with the reason, never
// skipped.
func (r Reader) Read(ctx context.Context, s Scope, at time.Time) Reading {
	out := Reading{At: at}
	if r.Health == nil {
		return out.finish()
	}
	out.Probes = r.probes(ctx, s)
	out.Metrics = r.metrics(ctx, s, at)
	out.Alerts = r.alerts(ctx, s)
	return out.finish()
}

// ProbesOnly is the reader for a batch gate (batch_bake): the seed keeps
// metrics and alerts at the stage's gate, since they describe the whole
// pass, so a batch is judged by its probes alone.
func (r Reader) ProbesOnly() Reader {
	if r.Health != nil {
		r.Health = &rollout.Health{Interval: r.Health.Interval, FailuresToStop: r.Health.FailuresToStop, Probes: r.Health.Probes}
	}
	return r
}

func (r Reader) client() *http.Client {
	if r.HTTP == nil {
		return outbound.Client(nil)
	}
	return r.HTTP
}

func (r Reader) timeout() time.Duration {
	return cmp.Or(r.Timeout, DefaultTimeout)
}

// get sends a GET with the reader's timeout and returns the response, whose
// body the caller closes.
func (r Reader) get(ctx context.Context, client *http.Client, url string) (*http.Response, context.CancelFunc, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return resp, cancel, nil
}

// apiURL is the endpoint path of the API at base, with the query: a base's
// own query is kept, its fragment dropped. Appending to the text instead
// let a base ending in "#" drop the path and reach any URL of the host.
func apiURL(base, path string, query url.Values) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	q := u.Query()
	for k, v := range query {
		q[k] = v
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawPath, u.RawQuery, u.Fragment, u.RawFragment = "", q.Encode(), "", ""
	return u.String(), nil
}

// requestError says why a request to the URL of field got no answer: the
// outbound rules' reason when they refused it.
func requestError(err error, field string) error {
	if why, ok := outbound.Refused(err, field); ok {
		return errors.New(why)
	}
	return err
}

// substitute fills the placeholders a metric query may use.
func substitute(query string, s Scope) string {
	return strings.NewReplacer(
		"{application}", s.Application,
		"{environment}", s.Environment,
		"{region}", s.Region,
		"{az}", s.AZ,
	).Replace(query)
}
