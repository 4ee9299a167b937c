package outbound

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

func TestCheck(t *testing.T) {
	open, _ := ParseAllow(nil)
	limited, err := ParseAllow([]string{"prometheus.internal", "10.0.0.0/8", "192.168.7.7", "169.254.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	nat64Listed, err := ParseAllow([]string{"64:ff9b::/96"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, host, address string
		rules               Rules
		why                 string // "" allowed
	}{
		{"the cloud metadata service", "169.254.169.254", "169.254.169.254:80", open, "is link-local"},
		{"a name that resolves to the metadata service", "metadata.example", "169.254.169.254:80", open, "is link-local"},
		{"the metadata service as an IPv4-mapped IPv6 address", "metadata.example", "[::ffff:169.254.169.254]:80", open, "is link-local"},
		{"IPv6 link-local", "fe80::1", "[fe80::1%eth0]:80", open, "is link-local"},
		{"AWS's IPv6 metadata service", "fd00:ec2::254", "[fd00:ec2::254]:80", open, "is the cloud metadata service"},
		{"Alibaba Cloud's metadata service", "100.100.100.200", "100.100.100.200:80", open, "is the cloud metadata service"},
		{"the metadata service through NAT64's well-known prefix", "metadata.example", "[64:ff9b::a9fe:a9fe]:80", open, "carries 169.254.169.254, which is link-local"},
		{"the metadata service through a local-use NAT64 prefix", "metadata.example", "[64:ff9b:1::a9fe:a9fe]:80", open, "carries 169.254.169.254, which is link-local"},
		{"the metadata service through 6to4", "metadata.example", "[2002:a9fe:a9fe::1]:80", open, "carries 169.254.169.254, which is link-local"},
		{"Alibaba's metadata service through NAT64", "metadata.example", "[64:ff9b::6464:64c8]:80", open, "carries 100.100.100.200, which is the cloud metadata service"},
		{"unspecified IPv4 through NAT64", "x.example", "[64:ff9b::]:80", open, "carries 0.0.0.0, which is unspecified"},
		{"a public address through NAT64", "prom.example", "[64:ff9b::203.0.113.9]:9090", open, ""},
		{"the rest of carrier-grade NAT by default", "prom.example", "100.100.100.201:9090", open, ""},
		{"unspecified IPv4, which reaches the machine itself", "0.0.0.0", "0.0.0.0:9090", open, "is unspecified"},
		{"unspecified IPv6", "::", "[::]:9090", open, "is unspecified"},
		{"multicast", "224.0.0.1", "224.0.0.1:80", open, "is multicast"},
		{"IPv6 multicast", "ff02::1", "[ff02::1]:80", open, "is multicast"},
		{"loopback by default", "localhost", "127.0.0.1:9090", open, ""},
		{"IPv6 loopback by default", "localhost", "[::1]:9090", open, ""},
		{"a private network by default", "prometheus", "10.1.2.3:9090", open, ""},
		{"a listed host, whatever it resolves to", "Prometheus.Internal.", "172.16.0.9:9090", limited, ""},
		{"a listed network", "prom.other", "10.9.9.9:9090", limited, ""},
		{"a listed address", "prom.other", "192.168.7.7:9090", limited, ""},
		{"loopback not listed", "localhost", "127.0.0.1:9090", limited, "is not in the server's outbound.allow"},
		{"link-local even when listed", "169.254.169.254", "169.254.169.254:80", limited, "is link-local"},
		{"the metadata service through NAT64 even when its network is listed", "64:ff9b::a9fe:a9fe", "[64:ff9b::a9fe:a9fe]:80", nat64Listed, "carries 169.254.169.254, which is link-local"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.rules.Check(c.host, c.address)
			var re *RefusedError
			switch {
			case c.why == "" && err != nil:
				t.Errorf("Check(%q, %q) = %v, want allowed", c.host, c.address, err)
			case c.why != "" && (!errors.As(err, &re) || re.Why != c.why):
				t.Errorf("Check(%q, %q) = %v, want refused: %s", c.host, c.address, err, c.why)
			}
		})
	}
}

func TestRefusedReasonNamesTheField(t *testing.T) {
	open, _ := ParseAllow(nil)
	for _, c := range []struct{ host, address, want string }{
		{"169.254.169.254", "169.254.169.254:80", "the address 169.254.169.254 of prometheus_url is link-local: ripcord does not call it"},
		{"metadata.example", "169.254.169.254:80", "the address 169.254.169.254 of prometheus_url (metadata.example) is link-local: ripcord does not call it"},
	} {
		got, ok := Refused(&url.Error{Op: "Get", URL: "http://x", Err: open.Check(c.host, c.address)}, "prometheus_url")
		if !ok || got != c.want {
			t.Errorf("Refused = %q, %v; want %q", got, ok, c.want)
		}
	}
	if _, ok := Refused(errors.New("connection refused"), "prometheus_url"); ok {
		t.Error("Refused took another error for a refusal")
	}
}

func TestParseAllow(t *testing.T) {
	for _, bad := range []string{"http://prometheus:9090", "prometheus:9090", "10.0.0.0/33", "a b"} {
		if _, err := ParseAllow([]string{bad}); err == nil {
			t.Errorf("ParseAllow(%q) accepted it", bad)
		}
	}
	r, err := ParseAllow([]string{" ", ""})
	if err != nil || r.Limited() {
		t.Errorf("ParseAllow of blanks = %v, %v; want the default rules", r, err)
	}
}

// hits counts requests to a loopback server.
func hitsServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts, &n
}

func TestClientCallsLoopback(t *testing.T) {
	ts, hits := hitsServer(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	resp, err := Client(nil).Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || hits.Load() != 1 {
		t.Errorf("status %d after %d requests, want 200 after 1", resp.StatusCode, hits.Load())
	}
}

// The metadata service's address is refused before any connection: the
// check is the dialer's Control function, which runs before connect.
func TestClientRefusesTheMetadataService(t *testing.T) {
	_, err := Client(nil).Get("http://169.254.169.254/latest/meta-data/")
	var re *RefusedError
	if !errors.As(err, &re) || re.Why != "is link-local" {
		t.Fatalf("GET the metadata service: %v, want refused as link-local", err)
	}
}

func TestClientFollowsNoRedirect(t *testing.T) {
	var elsewhere atomic.Int64
	ts, _ := hitsServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			elsewhere.Add(1)
			return
		}
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	})
	resp, err := Client(nil).Get(ts.URL + "/api")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusFound || elsewhere.Load() != 0 {
		t.Errorf("status %d, %d requests to the redirect's target; want 302 and none", resp.StatusCode, elsewhere.Load())
	}
	if got := Redirect(resp); got != "redirected to /elsewhere; ripcord follows no redirects for repository-chosen URLs" {
		t.Errorf("Redirect = %q", got)
	}
}

func TestClientKeepsToTheAllowList(t *testing.T) {
	ts, hits := hitsServer(t, func(http.ResponseWriter, *http.Request) {})
	_, err := Client([]string{"10.0.0.0/8"}).Get(ts.URL)
	if why, ok := Refused(err, "prometheus_url"); !ok || !strings.Contains(why, "is not in the server's outbound.allow") || hits.Load() != 0 {
		t.Errorf("loopback under outbound.allow 10.0.0.0/8: %v (%d requests), want refused, no request", err, hits.Load())
	}
	u, _ := url.Parse(ts.URL)
	resp, err := Client([]string{"localhost"}).Get("http://localhost:" + u.Port())
	if err != nil {
		t.Fatalf("a listed host: %v", err)
	}
	_ = resp.Body.Close()
	if hits.Load() != 1 {
		t.Errorf("%d requests to a listed host, want 1", hits.Load())
	}
}
