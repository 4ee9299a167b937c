// Package outbound is the HTTP client for URLs that a repository's
// .github/ripcord.yml chooses (prometheus_url, alertmanager_url, probes
// with from: server, policy_validation.url). Whoever can push to a default
// branch chooses them, so the server must not become their way into its
// own network: the client never connects to link-local addresses (the
// cloud metadata service at 169.254.169.254), the metadata services at
// other addresses, unspecified or multicast ones, nor to IPv6 addresses
// that carry one of those through a NAT64 or 6to4 gateway, checked on the address actually dialled so that a name resolving
// there is refused too; it follows no redirects; and the server may limit
// it to listed hosts and networks (outbound.allow). Loopback and private
// networks stay allowed by default: Prometheus at http://prometheus:9090
// is what these settings are for.
package outbound

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Rules say which addresses a repository-chosen URL may reach.
type Rules struct {
	// hosts and nets are outbound.allow; both empty: every address the
	// fixed refusals leave.
	hosts map[string]bool
	nets  []netip.Prefix
}

// ParseAllow reads outbound.allow: host names, IP addresses and CIDR
// networks. An empty list is the default rules.
func ParseAllow(entries []string) (Rules, error) {
	var r Rules
	for _, e := range entries {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
			continue
		case strings.Contains(e, "/"):
			p, err := netip.ParsePrefix(e)
			if err != nil {
				return Rules{}, fmt.Errorf("%q is not a CIDR network (for example 10.0.0.0/8 or fd00::/8)", e)
			}
			r.nets = append(r.nets, p.Masked())
		default:
			if a, err := netip.ParseAddr(strings.Trim(e, "[]")); err == nil {
				r.nets = append(r.nets, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
				continue
			}
			if !hostName(e) {
				return Rules{}, fmt.Errorf("%q is not a host name, an IP address or a CIDR network: write prometheus.internal, 10.1.2.3 or 10.0.0.0/8 (no scheme, no port)", e)
			}
			if r.hosts == nil {
				r.hosts = map[string]bool{}
			}
			r.hosts[normalHost(e)] = true
		}
	}
	return r, nil
}

func hostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

func normalHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

// Limited reports whether outbound.allow lists anything.
func (r Rules) Limited() bool { return len(r.hosts) > 0 || len(r.nets) > 0 }

// Cloud metadata services at addresses the private networks allowed by
// default would let through: AWS's IPv6 one (a unique local address) and
// Alibaba Cloud's (in the carrier-grade NAT range, 100.64.0.0/10).
var (
	metadataV6      = netip.MustParseAddr("fd00:ec2::254")
	metadataAlibaba = netip.MustParseAddr("100.100.100.200")
)

// IPv6 prefixes that carry an IPv4 address a gateway may forward to: the
// well-known and the local-use NAT64 prefixes (RFC 6052, RFC 8215), whose
// last 32 bits are the IPv4 address, and 6to4 (RFC 3056), whose bits 16-47
// are. On a network with a NAT64 gateway, 64:ff9b::a9fe:a9fe is the
// metadata service.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	nat6416   = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// embeddedV4 returns the IPv4 address an IPv6 address of a translating
// prefix carries.
func embeddedV4(a netip.Addr) (netip.Addr, bool) {
	b := a.As16()
	switch {
	case !a.Is6():
		return netip.Addr{}, false
	case nat64.Contains(a), nat6416.Contains(a):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}

// fixedRefusal says why a is never called, whatever outbound.allow says,
// or "" when it may be.
func fixedRefusal(a netip.Addr) string {
	if v4, ok := embeddedV4(a); ok {
		if why := fixedRefusal(v4); why != "" {
			return "carries " + v4.String() + ", which " + why
		}
	}
	switch {
	case a.IsLinkLocalUnicast():
		return "is link-local"
	case a == metadataV6, a == metadataAlibaba:
		return "is the cloud metadata service"
	case a.IsUnspecified():
		return "is unspecified"
	case a.IsMulticast():
		return "is multicast"
	}
	return ""
}

// Check says whether the client may connect to address (ip:port, as the
// dialer has it once the name is resolved) for a URL whose host is host.
// It is the dialer's Control function, so it runs before the connection is
// attempted, on the address that would be connected to.
func (r Rules) Check(host, address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &RefusedError{Host: host, Address: address, Why: "is not an IP address and port"}
	}
	a := ap.Addr().Unmap()
	refuse := func(why string) error {
		return &RefusedError{Host: host, Address: a.String(), Why: why}
	}
	if why := fixedRefusal(a); why != "" {
		return refuse(why)
	}
	if !r.Limited() || r.hosts[normalHost(host)] {
		return nil
	}
	for _, p := range r.nets {
		if p.Contains(a) {
			return nil
		}
	}
	return refuse("is not in the server's outbound.allow")
}

// RefusedError is a connection the rules refused; it is never attempted.
type RefusedError struct {
	Host    string // the URL's host
	Address string // the address it resolved to
	Why     string // "is link-local", ...
}

func (e *RefusedError) Error() string { return e.describe("") }

func (e *RefusedError) describe(field string) string {
	of := ""
	if field != "" {
		of = " of " + field
	}
	if h := strings.Trim(e.Host, "[]"); h != "" && h != e.Address {
		of += " (" + e.Host + ")"
	}
	return fmt.Sprintf("the address %s%s %s: ripcord does not call it", e.Address, of, e.Why)
}

// Refused returns the reason a request to the URL of field (as the
// repository config names it: "prometheus_url") was refused by the rules,
// and false for any other error.
func Refused(err error, field string) (string, bool) {
	var re *RefusedError
	if !errors.As(err, &re) {
		return "", false
	}
	return re.describe(field), true
}

// Redirect returns what to say of an answer that is a redirect, which the
// client does not follow, and "" for any other answer.
func Redirect(resp *http.Response) string {
	if resp == nil || resp.StatusCode < 300 || resp.StatusCode > 399 || resp.StatusCode == http.StatusNotModified {
		return ""
	}
	to := resp.Header.Get("Location")
	if to == "" {
		to = "no Location"
	}
	return fmt.Sprintf("redirected to %s; ripcord follows no redirects for repository-chosen URLs", to)
}

// WithHostsOf is allow with the hosts of the server's own URLs (its
// configuration, not a repository's) added when allow limits anything:
// where they reach the same client as repository-chosen URLs, a list meant
// for the latter must not cut the server off from its own services.
func WithHostsOf(allow []string, urls ...string) []string {
	if len(allow) == 0 {
		return allow
	}
	out := slices.Clone(allow)
	for _, raw := range urls {
		if u, err := url.Parse(raw); err == nil && u.Hostname() != "" {
			out = append(out, u.Hostname())
		}
	}
	return out
}

// clients are the clients made so far, one per outbound.allow: each keeps
// its connections for reuse, so every caller with the same list shares one.
var clients sync.Map // string -> *http.Client

// Client is the shared client for repository-chosen URLs under the rules of
// allow (outbound.allow; empty: the default rules). A list that does not
// parse, which the server's configuration refuses before this is reached,
// gives a client that refuses every connection.
func Client(allow []string) *http.Client {
	key := strings.Join(slices.Sorted(slices.Values(allow)), ",")
	if c, ok := clients.Load(key); ok {
		return c.(*http.Client)
	}
	c, _ := clients.LoadOrStore(key, newClient(allow))
	return c.(*http.Client)
}

func newClient(allow []string) *http.Client {
	r, err := ParseAllow(allow)
	t := http.DefaultTransport.(*http.Transport).Clone()
	// A proxy would be the one dialled, so the rules could not see where
	// the request goes: repository-chosen URLs are reached directly.
	t.Proxy = nil
	t.DialContext = guardedDial(r, err)
	return &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error {
		// A redirect is the answer: following it would take the request
		// to a host and path the repository config does not name (a probe
		// pinned to its target's {host}, an API path ripcord appends).
		return http.ErrUseLastResponse
	}}
}

// guardedDial dials under the rules r; a list that did not parse (err)
// refuses every connection.
func guardedDial(r Rules, err error) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if err != nil {
			return nil, fmt.Errorf("outbound.allow: %w", err)
		}
		host, _, _ := net.SplitHostPort(addr)
		d := net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second,
			Control: func(_, address string, _ syscall.RawConn) error { return r.Check(host, address) }}
		return d.DialContext(ctx, network, addr)
	}
}

// registryTransport is RegistryTransport's one transport, so its
// connections are reused across verifications.
var registryTransport = sync.OnceValue(func() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = guardedDial(Rules{}, nil)
	return t
})

// RegistryTransport is the transport for image registries named by images
// in a repository's release file or a release's body: those hosts are
// repository-chosen too, so link-local addresses (the cloud metadata
// service), unspecified and multicast ones are refused as for the client.
// Unlike the client it follows redirects (registries send blob downloads
// to storage elsewhere), keeps the environment's proxy settings (registries
// are often reached through one; the rules then see only the proxy), and
// ignores outbound.allow, which lists the hosts of health and policy URLs,
// not registries.
func RegistryTransport() http.RoundTripper { return registryTransport() }
