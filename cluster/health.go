package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// HealthConfig is how a rolled-back Deployment is verified (seed 000,
// "Health verification"); DefaultHealth has the seed's defaults.
type HealthConfig struct {
	// Port and Path make each pod's URL http://<pod-ip>:<port><path>.
	Port int
	Path string
	// MinHealthy pods must answer healthy for the check to pass.
	MinHealthy int
	// RequestTimeout bounds one request to one pod; Timeout the whole check.
	RequestTimeout time.Duration
	Timeout        time.Duration
	// Interval is the pause between two rounds.
	Interval time.Duration
	// MaxAppFailures consecutive rounds in which the pods were ready but
	// too few answered healthy end the check early.
	MaxAppFailures int
}

// DefaultHealth is seed 000's: port 8080, /health, one healthy pod, 5 s per
// request, 300 s in all, 10 s between rounds, 3 application failures.
func DefaultHealth() HealthConfig {
	return HealthConfig{Port: 8080, Path: "/health", MinHealthy: 1, RequestTimeout: 5 * time.Second,
		Timeout: 300 * time.Second, Interval: 10 * time.Second, MaxAppFailures: 3}
}

// withDefaults fills zero fields from DefaultHealth.
func (c HealthConfig) withDefaults() HealthConfig {
	d := DefaultHealth()
	if c.Port == 0 {
		c.Port = d.Port
	}
	if c.Path == "" {
		c.Path = d.Path
	}
	if !strings.HasPrefix(c.Path, "/") {
		c.Path = "/" + c.Path
	}
	if c.MinHealthy == 0 {
		c.MinHealthy = d.MinHealthy
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = d.RequestTimeout
	}
	if c.Timeout == 0 {
		c.Timeout = d.Timeout
	}
	if c.Interval == 0 {
		c.Interval = d.Interval
	}
	if c.MaxAppFailures == 0 {
		c.MaxAppFailures = d.MaxAppFailures
	}
	return c
}

// PodClient is the health check's HTTP client: it asks pods by their IP,
// inside the cluster, so it never goes through the HTTP proxy the agent's
// environment names (HTTP_PROXY is for the way out, to the ripcord
// server; a proxy cannot reach pod IPs). It follows no redirect
// (withoutRedirects).
func PodClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	return withoutRedirects(&http.Client{Transport: tr})
}

// withoutRedirects is a copy of c that hands a redirect back instead of
// following it: a pod's health URL that redirects gives no health answer
// of its own. Followed, the probe went wherever the Location said, off the
// cluster, or to a login page whose 200 stood for the pod's health.
func withoutRedirects(c *http.Client) *http.Client {
	cc := *c
	cc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cc
}

// HealthReport is the outcome of a health check.
type HealthReport struct {
	Passed bool
	// Reason says why it passed or failed.
	Reason string
	// Healthy of Probed pods answered healthy in the last round.
	Healthy, Probed int
	// APIError is set when the check ended on a Kubernetes API error,
	// Err to that error.
	APIError bool
	Err      error
}

// CheckHealth waits for every replica of the Deployment to be ready and then
// for at least MinHealthy of its Running pods to answer
// {"status":"healthy"} with 200. An API error ends it at once;
// MaxAppFailures application failures in a row end it early. A
// Deployment scaled to 0 replicas has no pod to ask: it passes once the
// controller observed its generation and no replica runs.
func CheckHealth(ctx context.Context, cs kubernetes.Interface, client *http.Client, namespace, name string, cfg HealthConfig) HealthReport {
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	failures := 0
	last := "no round ran"
	timedOut := func() HealthReport {
		return HealthReport{Reason: fmt.Sprintf("not healthy within %s; last: %s", cfg.Timeout, last)}
	}
	for {
		d, err := cs.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if ctx.Err() != nil {
				return timedOut()
			}
			return HealthReport{Reason: fmt.Sprintf("read Deployment %s/%s: %v", namespace, name, err), APIError: true, Err: err}
		}
		desired := replicasOf(d.Spec.Replicas)
		if desired == 0 {
			// Scaled to 0 on purpose: no pod will ever answer, so what can
			// be verified is that the controller observed the current
			// template and no pod of an older one is left.
			if r, ok := scaledToZero(d); ok {
				return HealthReport{Passed: true, Reason: r}
			}
			failures = 0
			last = fmt.Sprintf("scaled to 0 replicas: observed generation %d of %d, %d replicas left", d.Status.ObservedGeneration,
				d.Generation, d.Status.Replicas)
		} else if d.Status.ReadyReplicas == desired {
			pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
			if err != nil {
				if ctx.Err() != nil {
					return timedOut()
				}
				return HealthReport{Reason: fmt.Sprintf("list the pods of %s/%s: %v", namespace, name, err), APIError: true, Err: err}
			}
			healthy, probed, detail := probePods(ctx, client, pods.Items, cfg)
			if healthy >= cfg.MinHealthy {
				return HealthReport{Passed: true, Healthy: healthy, Probed: probed,
					Reason: fmt.Sprintf("%d of %d running pods answered healthy (%d needed)", healthy, probed, cfg.MinHealthy)}
			}
			failures++
			last = fmt.Sprintf("%d of %d running pods answered healthy, %d needed: %s", healthy, probed, cfg.MinHealthy, detail)
			if failures >= cfg.MaxAppFailures {
				return HealthReport{Healthy: healthy, Probed: probed,
					Reason: fmt.Sprintf("the application check failed %d times in a row; last: %s", failures, last)}
			}
		} else {
			failures = 0
			last = fmt.Sprintf("%d of %d replicas ready", d.Status.ReadyReplicas, desired)
		}
		select {
		case <-ctx.Done():
			return timedOut()
		case <-time.After(cfg.Interval):
		}
	}
}

// scaledToZero says why a Deployment whose spec asks for 0 replicas is
// verified: the controller observed its generation, and it runs no
// replica, updated or not (updated == spec == 0).
func scaledToZero(d *appsv1.Deployment) (string, bool) {
	s := d.Status
	if s.ObservedGeneration < d.Generation || s.Replicas != 0 || s.UpdatedReplicas != 0 {
		return "", false
	}
	return fmt.Sprintf("scaled to 0 replicas: the controller observed generation %d and no pod runs, so there is no pod to ask", d.Generation), true
}

func replicasOf(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

// probePods asks every Running pod in parallel and counts the healthy ones;
// detail names the first few failures.
func probePods(ctx context.Context, client *http.Client, pods []corev1.Pod, cfg HealthConfig) (healthy, probed int, detail string) {
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		failures []string
	)
	client = withoutRedirects(client)
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		probed++
		wg.Add(1)
		go func(p corev1.Pod) {
			defer wg.Done()
			err := probePod(ctx, client, p.Status.PodIP, cfg)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				healthy++
			} else if len(failures) < 3 {
				failures = append(failures, p.Name+": "+err.Error())
			}
		}(p)
	}
	wg.Wait()
	if probed == 0 {
		return 0, 0, "no Running pod"
	}
	return healthy, probed, strings.Join(failures, "; ")
}

// probePod is healthy only on 200 with a JSON body whose status is
// "healthy"; a redirect (3xx) is not healthy, whatever it leads to.
func probePod(ctx context.Context, client *http.Client, ip string, cfg HealthConfig) error {
	if ip == "" {
		return fmt.Errorf("no pod IP yet")
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
	defer cancel()
	u := "http://" + net.JoinHostPort(ip, strconv.Itoa(cfg.Port)) + cfg.Path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return fmt.Errorf("GET %s answered %d, a redirect to %q, which is not a health answer: not followed", u, resp.StatusCode,
			resp.Header.Get("Location"))
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s answered %d", u, resp.StatusCode)
	}
	var h struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(body, &h); err != nil || h.Status != "healthy" {
		return fmt.Errorf(`GET %s answered 200 without {"status":"healthy"}: %.80s`, u, body)
	}
	return nil
}
