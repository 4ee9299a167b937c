package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

const benchSecret = "bench-secret"

func sign(b []byte) string {
	mac := hmac.New(sha256.New, []byte(benchSecret))
	mac.Write(b)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// result is one scenario's figures.
type result struct {
	name      string
	sent      int64
	errors    int64
	perSecond float64
	p50, p99  time.Duration
}

// run is one stretch of load on one server.
type run struct {
	sent, errors int64
	elapsed      time.Duration
	latencies    []time.Duration
}

// summarize adds up a scenario's runs: the rate is all acknowledged over
// all the time loaded, the percentiles are over every answer.
func summarize(name string, runs ...run) result {
	r := result{name: name}
	var elapsed time.Duration
	var all []time.Duration
	for _, x := range runs {
		r.sent += x.sent
		r.errors += x.errors
		elapsed += x.elapsed
		all = append(all, x.latencies...)
	}
	if elapsed > 0 {
		r.perSecond = float64(r.sent) / elapsed.Seconds()
	}
	slices.Sort(all)
	if len(all) > 0 {
		r.p50 = all[len(all)*50/100]
		r.p99 = all[len(all)*99/100]
	}
	return r
}

func (r result) String() string {
	return fmt.Sprintf("%-38s %9.0f deliveries/s   p50 %7.2f ms   p99 %7.2f ms   (%d acknowledged, %d errors)",
		r.name, r.perSecond, ms(r.p50), ms(r.p99), r.sent, r.errors)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// load posts signed deliveries to url from `concurrency` connections until
// the duration passes or `count` deliveries were acknowledged (0: no count).
func load(name, url string, concurrency int, duration time.Duration, count int64, b []byte) result {
	return summarize(name, loadRun(name, url, concurrency, duration, count, b))
}

// deliveryID is a random GUID, as GitHub's X-GitHub-Delivery is. Ids that
// sort in the order they are sent (what the loader used before) let the
// store append to one leaf of its id index; GitHub's land all over it, and
// every delivery then writes a page of the index of its own.
func deliveryID() string {
	a, b := rand.Uint64(), rand.Uint64()
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", a>>32, a>>16&0xffff, a&0xfff, b>>48&0x3fff|0x8000, b&0xffffffffffff)
}

// loadRun is load's stretch of work, not yet summarized.
func loadRun(name, url string, concurrency int, duration time.Duration, count int64, b []byte) run {
	sig := sign(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: concurrency, MaxConnsPerHost: concurrency}, Timeout: 30 * time.Second}
	var sent, errs, next atomic.Int64
	deadline := time.Now().Add(duration)
	lat := make([][]time.Duration, concurrency)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				n := next.Add(1)
				if count > 0 && n > count {
					return
				}
				req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-GitHub-Event", "check_suite")
				req.Header.Set("X-GitHub-Delivery", deliveryID())
				req.Header.Set("X-Hub-Signature-256", sig)
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					errs.Add(1)
					continue
				}
				// Read the answer to its end: an unread body makes the
				// client close the connection, and every request would
				// then open a new one (the dispatcher's empty answers hid
				// this; serve's JSON answers paid for it).
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode/100 != 2 {
					errs.Add(1)
					continue
				}
				lat[w] = append(lat[w], time.Since(t0))
				sent.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	client.CloseIdleConnections()
	return run{sent: sent.Load(), errors: errs.Load(), elapsed: elapsed, latencies: slices.Concat(lat...)}
}
