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
	return summarize(name, loadRun(url, concurrency, duration, count, b))
}

// deliveryID is a GUID like GitHub's X-GitHub-Delivery: a version-1 UUID,
// as GitHub's description of its webhooks shows
// (0b989ba4-242f-11e5-81e1-c7b6966d2516). Its first group is the low 32
// bits of a clock of 100-ns ticks, so ids sent close together land close
// together in the store's id index, while over the whole index they are
// spread: that group wraps every seven minutes. Random (version-4) ids,
// which the loader sent before, wrote an index page per delivery.
func deliveryID() string {
	now := uint64(time.Now().UnixNano()/100) + uuidEpoch
	var t uint64
	for {
		last := lastTick.Load()
		if t = max(now, last+1); lastTick.CompareAndSwap(last, t) {
			break
		}
	}
	return fmt.Sprintf("%08x-%04x-1%03x-%04x-%012x", t&0xffffffff, t>>32&0xffff, t>>48&0xfff, clockSeq, node)
}

// uuidEpoch is 1970-01-01 in 100-ns ticks since 1582-10-15, where
// version-1 UUIDs count from.
const uuidEpoch = 0x01b21dd213814000

var (
	// lastTick keeps ids unique when two are made in the same tick.
	lastTick atomic.Uint64
	// clockSeq and node stand for the sending host, random per run.
	clockSeq = rand.Uint64()&0x3fff | 0x8000
	node     = rand.Uint64() & 0xffffffffffff
)

// loadRun is load's stretch of work, not yet summarized.
func loadRun(url string, concurrency int, duration time.Duration, count int64, b []byte) run {
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
