package config

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ripcord/ripcord/internal/outbound"
)

// Setting is one configuration key.
type Setting struct {
	Key     string // YAML key, dotted for sections
	Env     string
	Default string
	Help    string
	set     func(c *Config, v string) error
}

// Flag is the setting's command-line flag: the key with '.' and '_' as '-'.
func (s Setting) Flag() string {
	return strings.NewReplacer(".", "-", "_", "-").Replace(s.Key)
}

// Settings lists every setting in the order the README documents them.
func Settings() []Setting { return settings }

var settings = []Setting{
	{Key: "listen", Env: "RIPCORD_LISTEN", Default: "127.0.0.1:8080",
		Help: "address the HTTP server listens on (host:port)", set: setListen},
	{Key: "database", Env: "RIPCORD_DATABASE", Default: "sqlite://ripcord.db",
		Help: "database URL: sqlite://FILE (embedded, one replica) or postgres://USER:PASS@HOST:PORT/DB (several replicas)", set: setDatabase},
	{Key: "public_url", Env: "RIPCORD_PUBLIC_URL", Default: "http://127.0.0.1:8080",
		Help: "URL at which GitHub and people reach this server (webhook and page links); when only listen is set, http://LISTEN (an unspecified host as 127.0.0.1, port 0 as the port chosen at start)", set: setPublicURL},
	{Key: "api_token", Env: "RIPCORD_API_TOKEN", Default: "",
		Help: "bearer token for /api/v1 by people and the CLI; without it /api/v1 answers 401 to everyone", set: func(c *Config, v string) error { c.APIToken = v; return nil }},
	{Key: "log_level", Env: "RIPCORD_LOG_LEVEL", Default: "info",
		Help: "debug, info, warn or error", set: setLogLevel},
	{Key: "github.app_id", Env: "RIPCORD_GITHUB_APP_ID", Default: "",
		Help: "the GitHub App's numeric id", set: setAppID},
	{Key: "github.private_key", Env: "RIPCORD_GITHUB_PRIVATE_KEY", Default: "",
		Help: "the App's private key: PEM text or the path of a .pem file", set: setPrivateKey},
	{Key: "github.webhook_secrets", Env: "RIPCORD_GITHUB_WEBHOOK_SECRET", Default: "",
		Help: "webhook secrets, comma-separated: a delivery signed with any of them is accepted (rotation)", set: setSecrets},
	{Key: "github.api_url", Env: "RIPCORD_GITHUB_API_URL", Default: "https://api.github.com/",
		Help: "GitHub's REST API URL (GitHub Enterprise Server: https://HOST/api/v3/)", set: setAPIURL},
	{Key: "secrets_key", Env: "RIPCORD_SECRETS_KEY", Default: "",
		Help: "32-byte key, base64 or hex (openssl rand -base64 32), that encrypts the App credentials registered through /setup; empty: a key file ripcord-secrets.key made (mode 0600) beside the SQLite database, or in the working directory for PostgreSQL", set: setSecretsKey},
	{Key: "oidc.issuer", Env: "RIPCORD_OIDC_ISSUER", Default: "https://token.actions.githubusercontent.com",
		Help: "issuer of the GitHub Actions OIDC tokens that workflows post facts and releases with", set: func(c *Config, v string) error {
			u, err := absoluteHTTP(v)
			if err != nil {
				return err
			}
			c.OIDC.Issuer = strings.TrimSuffix(u.String(), "/")
			return nil
		}},
	{Key: "oidc.audience", Env: "RIPCORD_OIDC_AUDIENCE", Default: "",
		Help: "audience those tokens must carry (the action's audience input); empty: public_url", set: func(c *Config, v string) error { c.OIDC.Audience = v; return nil }},
	{Key: "stall_after", Env: "RIPCORD_STALL_AFTER", Default: "15m",
		Help: "a release that gets no fact this long after it opened (one opened for a pull request: after the merge) raises a stall alert; a repository's own stall_after in .github/ripcord.yml wins for its releases", set: duration(func(c *Config) *time.Duration { return &c.StallAfter })},
	{Key: "retention", Env: "RIPCORD_RETENTION", Default: "336h",
		Help: "finished releases older than this are deleted, except the newest 100 per app, environment and cluster (the widest eligibility window reads them); finished recovery episodes, with their rollback dispatches and alert issue links, are deleted once last changed longer ago than this and than 840h (35 days), so below 840h (the default too) they are kept 35 days", set: duration(func(c *Config) *time.Duration { return &c.Retention })},
	{Key: "deliveries.retention", Env: "RIPCORD_DELIVERIES_RETENTION", Default: "336h",
		Help: "webhook deliveries finished (processed, ignored or failed) longer ago than this are deleted with their payloads", set: duration(func(c *Config) *time.Duration { return &c.DeliveryRetention })},
	{Key: "cdevents.sinks", Env: "RIPCORD_CDEVENTS_SINKS", Default: "",
		Help: "CloudEvents HTTP URLs that receive CDEvents (service deployed, upgraded, rolled back), comma-separated", set: setSinks},
	{Key: "clusters", Env: "RIPCORD_CLUSTERS", Default: "",
		Help: "cluster tokens for the facts API and the agent: NAME=TOKEN or NAME=@FILE, comma-separated; a NAME listed again adds a token (YAML: {NAME: {token: ...} | {tokens: [...]} | {token_file: ...}}); a token file holds one token per line and is read again when it changes, so a token is rotated without a restart: add the new one, move the agent to it, remove the old one", set: setClusters},
	{Key: "registries.insecure", Env: "RIPCORD_REGISTRIES_INSECURE", Default: "",
		Help: "image registries the gates reach over plain HTTP: host or host:port, comma-separated (loopback and RFC 1918 addresses may use HTTP without being listed)", set: setInsecureRegistries},
	{Key: "registries.auth", Env: "RIPCORD_REGISTRIES_AUTH", Default: "",
		Help: "path of a docker config.json whose auths (auth, or username and password) the gates use per registry; credential helpers are not run; empty: anonymous", set: setRegistryAuth},
	{Key: "rollout.max_parallel", Env: "RIPCORD_ROLLOUT_MAX_PARALLEL", Default: "16",
		Help: "most targets of a rollout batch updated at once: a batch's parallel is capped by it (the status shows what was asked and what runs)", set: setRolloutMaxParallel},
	{Key: "rollout.prometheus_url", Env: "RIPCORD_ROLLOUT_PROMETHEUS_URL", Default: "",
		Help: "Prometheus that rollout health gates query when the repository config names no prometheus_url", set: optionalHTTP(func(c *Config) *string { return &c.Rollout.PrometheusURL })},
	{Key: "rollout.alertmanager_url", Env: "RIPCORD_ROLLOUT_ALERTMANAGER_URL", Default: "",
		Help: "Alertmanager that rollout health gates read when the repository config names no alertmanager_url", set: optionalHTTP(func(c *Config) *string { return &c.Rollout.AlertmanagerURL })},
	{Key: "outbound.allow", Env: "RIPCORD_OUTBOUND_ALLOW", Default: "",
		Help: "hosts, IP addresses and CIDR networks (prometheus.internal, 10.0.0.0/8), comma-separated, that the URLs a repository's .github/ripcord.yml chooses (prometheus_url, alertmanager_url, probes with from: server, policy_validation.url) may reach, beside the hosts of rollout.prometheus_url and rollout.alertmanager_url; empty: any address but the link-local and other cloud metadata ones, unspecified and multicast ones (also through NAT64 or 6to4), which are refused whatever the list says (README: Requests to URLs a repository chooses)", set: setOutboundAllow},
}

var byKey, byFlag = func() (map[string]Setting, map[string]Setting) {
	k, f := map[string]Setting{}, map[string]Setting{}
	for _, s := range settings {
		k[s.Key], f[s.Flag()] = s, s
	}
	return k, f
}()

func setListen(c *Config, v string) error {
	if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
		return fmt.Errorf("%q is not host:port (for example 127.0.0.1:8080 or :8080)", v)
	}
	c.Listen = v
	return nil
}

func setDatabase(c *Config, v string) error {
	switch {
	case strings.HasPrefix(v, "sqlite://") && len(v) > len("sqlite://"),
		strings.HasPrefix(v, "postgres://"), strings.HasPrefix(v, "postgresql://"):
		c.Database = v
		return nil
	}
	// The value goes into a log line: its password must not.
	if !strings.Contains(v, "://") && strings.Contains(v, "=") {
		return errors.New("a libpq keyword/value string (host=… dbname=…) is not accepted: " +
			"write it as a URL, postgres://USER:PASS@HOST:PORT/DB (options such as sslmode=require after a ?)")
	}
	return fmt.Errorf("%q is not a database URL: expected sqlite://FILE or postgres://USER@HOST:PORT/DB", redactPassword(v))
}

// redactPassword hides the password of a URL's user information.
func redactPassword(v string) string {
	u, err := url.Parse(v)
	if err != nil {
		if i := strings.Index(v, "@"); i >= 0 {
			return "…" + v[i:] // unparsable: keep only what follows the credentials
		}
		return v
	}
	// Only a URL with a password is written anew: u.String() also
	// rewrites what it need not, and "sqlite://" was shown as "sqlite:",
	// not what the user typed.
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
		return u.String()
	}
	return v
}

func absoluteHTTP(v string) (*url.URL, error) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an absolute http(s) URL", v)
	}
	return u, nil
}

func setPublicURL(c *Config, v string) error {
	u, err := absoluteHTTP(v)
	if err != nil {
		return err
	}
	c.PublicURL = strings.TrimSuffix(u.String(), "/")
	return nil
}

func setAPIURL(c *Config, v string) error {
	u, err := absoluteHTTP(v)
	if err != nil {
		return err
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	c.GitHub.APIURL = u.String()
	return nil
}

func setLogLevel(c *Config, v string) error {
	switch v {
	case "debug", "info", "warn", "error":
		c.LogLevel = v
		return nil
	}
	return fmt.Errorf("%q is not a log level: expected debug, info, warn or error", v)
}

func setAppID(c *Config, v string) error {
	if v == "" {
		return nil
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		return fmt.Errorf("%q is not an App id: expected the positive number shown on the App's settings page", v)
	}
	c.GitHub.AppID = id
	return nil
}

// keyKind names a parsed private key's algorithm for an error line.
func keyKind(key any) string {
	switch key.(type) {
	case *ecdsa.PrivateKey:
		return "ECDSA"
	case ed25519.PrivateKey:
		return "Ed25519"
	case *ecdh.PrivateKey:
		return "ECDH"
	}
	return fmt.Sprintf("%T", key)
}

func setPrivateKey(c *Config, v string) error {
	if v == "" {
		return nil
	}
	data := []byte(v)
	if !strings.Contains(v, "-----BEGIN") {
		b, err := os.ReadFile(v)
		if err != nil {
			return fmt.Errorf("neither PEM text nor a readable file: %w", err)
		}
		data = b
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return errors.New("no PEM block found: expected the App's private key (-----BEGIN RSA PRIVATE KEY-----)")
	}
	// GitHub signs an App's JWTs with RS256 only: a PKCS#8 key of another
	// kind passed here and failed at the first call to GitHub.
	const want = "GitHub Apps use RSA keys: give the private key (.pem) generated on the App's settings page"
	if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err != nil {
		key, err8 := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err8 != nil {
			return fmt.Errorf("the PEM block %q is not an RSA private key in PKCS#1 or PKCS#8; %s", block.Type, want)
		}
		if _, ok := key.(*rsa.PrivateKey); !ok {
			return fmt.Errorf("the PEM block holds a %s key, not an RSA one; %s", keyKind(key), want)
		}
	}
	c.GitHub.PrivateKey = data
	return nil
}

func setSecretsKey(c *Config, v string) error {
	c.SecretsKey = nil
	if v == "" {
		return nil
	}
	key, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(key) != 32 {
		if key, err = hex.DecodeString(v); err != nil || len(key) != 32 {
			return errors.New("not 32 bytes in base64 or hex: make one with openssl rand -base64 32")
		}
	}
	c.SecretsKey = key
	return nil
}

func setSecrets(c *Config, v string) error {
	c.GitHub.WebhookSecrets = nil
	if v == "" {
		return nil
	}
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			return errors.New("an empty secret in the list: remove the extra comma")
		}
		c.GitHub.WebhookSecrets = append(c.GitHub.WebhookSecrets, s)
	}
	return nil
}

func setClusters(c *Config, v string) error {
	c.Clusters = map[string]*Tokens{}
	if v == "" {
		return nil
	}
	for _, entry := range strings.Split(v, ",") {
		name, token, ok := strings.Cut(strings.TrimSpace(entry), "=")
		if !ok || name == "" || token == "" {
			return fmt.Errorf("%q is not NAME=TOKEN or NAME=@FILE", entry)
		}
		// A name listed again adds a token: during a rotation the old
		// and the new one are both accepted.
		toks := c.Clusters[name]
		if toks == nil {
			toks = &Tokens{}
			c.Clusters[name] = toks
		}
		if file, isFile := strings.CutPrefix(token, "@"); isFile {
			f, err := openTokenFile(file)
			if err != nil {
				return fmt.Errorf("cluster %s: token file %s: %w", name, file, err)
			}
			toks.files = append(toks.files, f)
			continue
		}
		toks.static = append(toks.static, token)
	}
	return nil
}

func duration(field func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("%q is not a positive duration (for example 15m, 2h, 336h)", v)
		}
		*field(c) = d
		return nil
	}
}

func setSinks(c *Config, v string) error {
	c.CDEventSinks = nil
	if v == "" {
		return nil
	}
	for _, s := range strings.Split(v, ",") {
		u, err := absoluteHTTP(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		c.CDEventSinks = append(c.CDEventSinks, u.String())
	}
	return nil
}

// Reference renders the settings as the README's markdown table.
func Reference() string {
	var b strings.Builder
	b.WriteString("| key | flag | env | default | meaning |\n|---|---|---|---|---|\n")
	for _, s := range settings {
		def := "–"
		if s.Default != "" {
			def = "`" + s.Default + "`"
		}
		help := strings.ReplaceAll(s.Help, "|", `\|`) // a bare | would end the table cell
		fmt.Fprintf(&b, "| `%s` | `--%s` | `%s` | %s | %s |\n", s.Key, s.Flag(), s.Env, def, help)
	}
	return b.String()
}

func setRolloutMaxParallel(c *Config, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return fmt.Errorf("%q is not a whole number of at least 1", v)
	}
	c.Rollout.MaxParallel = n
	return nil
}

// optionalHTTP sets an http(s) URL that may be left empty.
func optionalHTTP(field func(*Config) *string) func(*Config, string) error {
	return func(c *Config, v string) error {
		if v == "" {
			*field(c) = ""
			return nil
		}
		u, err := absoluteHTTP(v)
		if err != nil {
			return err
		}
		*field(c) = strings.TrimSuffix(u.String(), "/")
		return nil
	}
}

func setOutboundAllow(c *Config, v string) error {
	c.Outbound.Allow = nil
	if v == "" {
		return nil
	}
	list := strings.Split(v, ",")
	if _, err := outbound.ParseAllow(list); err != nil {
		return err
	}
	for _, e := range list {
		if e = strings.TrimSpace(e); e != "" {
			c.Outbound.Allow = append(c.Outbound.Allow, e)
		}
	}
	return nil
}
