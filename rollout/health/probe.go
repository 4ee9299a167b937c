package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/ripcord/ripcord/internal/outbound"
	"github.com/ripcord/ripcord/rollout"
)

// probeConcurrency bounds the probes in flight at once: a stage can have
// hundreds of targets, and the gate must not look like an attack on them.
const probeConcurrency = 8

// probes sends every from: server probe to every host of the scope.
func (r Reader) probes(ctx context.Context, s Scope) []ProbeResult {
	type job struct {
		i     int
		probe rollout.Probe
		host  string
	}
	var jobs []job
	for _, p := range r.Health.Probes {
		if p.From != rollout.FromServer {
			continue
		}
		for _, h := range s.Hosts {
			jobs = append(jobs, job{len(jobs), p, h})
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	client := noRedirects(r.client())
	out := make([]ProbeResult, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, probeConcurrency)
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[j.i] = r.probe(ctx, client, j.probe, j.host)
		}()
	}
	wg.Wait()
	return out
}

// noRedirects copies c so that a probe reads the target's own answer: a
// redirect is judged as the status it is, and never takes the probe to
// another host.
func noRedirects(c *http.Client) *http.Client {
	cp := *c
	cp.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cp
}

// ProbeURL substitutes host into a probe's URL.
func ProbeURL(p rollout.Probe, host string) string {
	return strings.ReplaceAll(p.URL, "{host}", host)
}

func (r Reader) probe(ctx context.Context, client *http.Client, p rollout.Probe, host string) ProbeResult {
	res := ProbeResult{URL: ProbeURL(p, host), Host: host, From: string(rollout.FromServer), ExpectStatus: p.ExpectStatus}
	if res.ExpectStatus == 0 {
		res.ExpectStatus = rollout.DefaultExpectStatus
	}
	resp, cancel, err := r.get(ctx, client, res.URL)
	if err != nil {
		res.Error = probeError(err)
		res.Reason = fmt.Sprintf("probe %s: %s", res.URL, res.Error)
		return res
	}
	defer cancel()
	// Drain a little so the connection can be reused; a health page is small.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	res.Status = resp.StatusCode
	res = JudgeProbe(res)
	if why := outbound.Redirect(resp); why != "" && !res.Green {
		res.Reason += ", " + why
	}
	return res
}

// JudgeProbe sets Green and Reason of a probe result from its status and
// error; the executor uses it on results posted by runners too.
func JudgeProbe(res ProbeResult) ProbeResult {
	if res.ExpectStatus == 0 {
		res.ExpectStatus = rollout.DefaultExpectStatus
	}
	switch {
	case res.Error != "":
		res.Green, res.Reason = false, fmt.Sprintf("probe %s: %s", res.URL, res.Error)
	case res.Status != res.ExpectStatus:
		res.Green, res.Reason = false, fmt.Sprintf("probe %s: status %d, expected %d", res.URL, res.Status, res.ExpectStatus)
	default:
		res.Green, res.Reason = true, ""
	}
	return res
}

func probeError(err error) string {
	if why, ok := outbound.Refused(err, "the probe's url"); ok {
		return why
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer in time"
	}
	var uerr interface{ Unwrap() error }
	if errors.As(err, &uerr) && uerr.Unwrap() != nil {
		return uerr.Unwrap().Error()
	}
	return err.Error()
}
