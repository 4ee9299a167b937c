// Package config holds the server's settings: every one is a flag, a RIPCORD_*
// environment variable and a key of an optional YAML file, with the precedence
// flag > environment > file > default. The table in settings.go is the single
// definition; the README's reference is generated from it.
package config

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	suggestion "github.com/ripcord/ripcord/internal/suggest"
)

// Config is the server's configuration after loading.
type Config struct {
	Listen    string
	Database  string
	PublicURL string
	APIToken  string
	LogLevel  string
	GitHub    GitHub
	// Clusters maps a cluster name to the bearer tokens it may present
	// (facts API, agent): several during a rotation.
	Clusters map[string]*Tokens
	OIDC     OIDC
	// StallAfter and Retention govern release records.
	StallAfter time.Duration
	Retention  time.Duration
	// DeliveryRetention is how long finished webhook deliveries are kept.
	DeliveryRetention time.Duration
	CDEventSinks      []string
	// SecretsKey encrypts the App credentials stored by /setup (AES-256-GCM);
	// nil: a key file beside the database.
	SecretsKey []byte
	// Registries says how the gates reach image registries.
	Registries Registries
	// Rollout holds the server's side of rollouts in waves.
	Rollout Rollout
	// Outbound limits where URLs chosen by a repository's config may lead.
	Outbound Outbound
	// sources says where each setting's value came from, for an error
	// found after loading (an address already in use) to name it as a
	// bad setting is named.
	sources map[string]string
}

// SourceOf says where the value of the setting key came from, as a bad
// setting's line says it: "default", "environment variable …", "flag
// --…" or the file's path:line:column.
func (c *Config) SourceOf(key string) string {
	if s, ok := c.sources[key]; ok {
		return s
	}
	return "default"
}

// ListeningOn takes the address the server bound its listen setting to.
// A listen of port 0 asks the kernel for any free port; when public_url
// was not set it came from listen, "http://127.0.0.1:0", which reaches
// nothing, and the set-up link of the start-up log, the page links and
// the OIDC audience (unless set) carried it. They take the chosen port
// instead. Any other address changes nothing.
func (c *Config) ListeningOn(addr string) {
	_, port, err := net.SplitHostPort(c.Listen)
	if err != nil || port != "0" {
		return
	}
	if c.SourceOf("public_url") != defaultFromListen {
		return
	}
	u, ok := listenURL(addr)
	if !ok {
		return
	}
	if c.SourceOf("oidc.audience") == "default" { // it is public_url (Load)
		c.OIDC.Audience = u
	}
	c.PublicURL = u
}

// Rollout is the server's side of rollouts in waves: the cap on a batch's
// parallelism and where health gates read metrics and alerts when the
// repository config names no place.
type Rollout struct {
	MaxParallel     int
	PrometheusURL   string
	AlertmanagerURL string
}

// Outbound limits the requests the server makes to URLs that a
// repository's .github/ripcord.yml chooses (see internal/outbound).
type Outbound struct {
	// Allow are the hosts, addresses and CIDR networks those URLs may
	// reach; empty: any address but those always refused.
	Allow []string
}

// OIDC says which GitHub Actions OIDC tokens are accepted.
type OIDC struct {
	Issuer   string
	Audience string // empty: the public URL
}

// GitHub is the App's identity and where GitHub is.
type GitHub struct {
	AppID          int64
	PrivateKey     []byte // PEM
	WebhookSecrets []string
	APIURL         string
}

// AppConfigured reports whether ripcord can act as the App.
func (g GitHub) AppConfigured() bool { return g.AppID != 0 && len(g.PrivateKey) > 0 }

// HalfConfiguredApp says, when only one of github.app_id and
// github.private_key is set, which one is and which is missing: the App of
// the configuration is then not used at all, which the start-up warning
// about an App not configured did not explain to someone who set one of
// them. Empty when both or neither are set.
func (c *Config) HalfConfiguredApp() string {
	set, missing := "github.app_id", "github.private_key (--github-private-key, RIPCORD_GITHUB_PRIVATE_KEY)"
	switch {
	case c.GitHub.AppID != 0 && len(c.GitHub.PrivateKey) == 0:
	case c.GitHub.AppID == 0 && len(c.GitHub.PrivateKey) > 0:
		set, missing = "github.private_key", "github.app_id (--github-app-id, RIPCORD_GITHUB_APP_ID)"
	default:
		return ""
	}
	return fmt.Sprintf("%s is set (from %s) but %s is not: the App of the configuration is not used until both are; "+
		"an App registered through /setup is used meanwhile, if there is one", set, c.SourceOf(set), missing)
}

// Error is one bad setting: it names the key, where the value came from and
// what is expected.
type Error struct {
	Key, Source, Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("config: %s (from %s): %s", e.Key, e.Source, e.Message)
}

// Load builds the configuration from defaults, the YAML file named by
// --config or RIPCORD_CONFIG, the environment and the flags already parsed
// into fs by Register.
func Load(fs *flag.FlagSet, getenv func(string) string) (*Config, error) {
	c := &Config{}
	values := map[string]sourced{}
	for _, s := range settings {
		values[s.Key] = sourced{s.Default, "default"}
	}
	fromFile, err := configFile(fs, getenv)
	if err != nil {
		return nil, err
	}
	for k, v := range fromFile {
		values[k] = v
	}
	for _, s := range settings {
		if v := getenv(s.Env); v != "" {
			values[s.Key] = sourced{v, "environment variable " + s.Env}
		}
	}
	fs.Visit(func(f *flag.Flag) {
		if s, ok := byFlag[f.Name]; ok {
			values[s.Key] = sourced{f.Value.String(), "flag --" + f.Name}
		}
	})
	if values["public_url"].source == "default" && values["listen"].source != "default" {
		if u, ok := listenURL(values["listen"].value); ok {
			values["public_url"] = sourced{u, defaultFromListen}
		}
	}
	var errs []error
	c.sources = map[string]string{}
	for _, s := range settings {
		v := values[s.Key]
		c.sources[s.Key] = v.source
		if err := s.set(c, v.value); err != nil {
			errs = append(errs, &Error{Key: s.Key, Source: v.source, Message: err.Error()})
		}
	}
	if c.OIDC.Audience == "" {
		c.OIDC.Audience = c.PublicURL
	}
	return c, errors.Join(errs...)
}

// configFile reads the YAML file named by --config (a flag of fs) or
// RIPCORD_CONFIG; none named: no values.
func configFile(fs *flag.FlagSet, getenv func(string) string) (map[string]sourced, error) {
	file, origin := getenv("RIPCORD_CONFIG"), "environment variable RIPCORD_CONFIG"
	if f := fs.Lookup("config"); f != nil && f.Value.String() != "" {
		file, origin = f.Value.String(), "flag --config"
	}
	if file == "" {
		return nil, nil
	}
	return readFile(file, origin)
}

// LoadSetting loads the one setting key as Load would for the server
// (flag > environment > file > default), for a command that checks
// something against the server's setting (validate: rollout.max_parallel).
// flagName is the flag of fs that sets it, as that command names it; the
// file is the one --config (a flag of fs, if it has one) or RIPCORD_CONFIG
// names. Only that setting's value is checked: another setting's problem
// is serve's to report. A file that cannot be read or has an unknown key
// is an error, as it is for serve. c is the defaults with that setting
// set; source says where its value came from ("default", "environment
// variable ...", "flag --...", or the file's path:line:column).
func LoadSetting(fs *flag.FlagSet, getenv func(string) string, key, flagName string) (c *Config, source string, err error) {
	s, ok := byKey[key]
	if !ok {
		return nil, "", fmt.Errorf("config: no setting %q", key)
	}
	v := sourced{s.Default, "default"}
	fromFile, err := configFile(fs, getenv)
	if err != nil {
		return nil, "", err
	}
	if f, ok := fromFile[key]; ok {
		v = f
	}
	if e := getenv(s.Env); e != "" {
		v = sourced{e, "environment variable " + s.Env}
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == flagName {
			v = sourced{f.Value.String(), "flag --" + f.Name}
		}
	})
	c = Defaults()
	if err := s.set(c, v.value); err != nil {
		return nil, v.source, &Error{Key: key, Source: v.source, Message: err.Error()}
	}
	return c, v.source, nil
}

// defaultFromListen is the source of a public_url that listen gave.
const defaultFromListen = "default (from listen)"

// listenURL is the URL a server listening on addr is reached at from this
// machine: public_url's default when only listen is set, so that the links
// serve prints and its pages carry point where it listens. It is false for
// an address that is not host:port, which listen's own check names.
func listenURL(addr string) (string, bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", false
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port), true
}

// Register adds a flag for every setting, and --config, to fs.
func Register(fs *flag.FlagSet) {
	fs.String("config", "", "YAML file with settings (keys as in the README's reference); env RIPCORD_CONFIG")
	for _, s := range settings {
		fs.String(s.Flag(), "", fmt.Sprintf("%s (env %s, default %q)", s.Help, s.Env, s.Default))
	}
}

type sourced struct{ value, source string }

// readFile reads the YAML file strictly: an unknown key is an error. origin
// is what named the file (the flag or the environment variable), for the
// errors about the file as a whole.
func readFile(path, origin string) (map[string]sourced, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{Key: "config", Source: origin, Message: err.Error()}
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	// An empty file, or one of comments only (every line of an example
	// commented out), holds no settings: it is not broken YAML.
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return map[string]sourced{}, nil
	} else if err != nil {
		return nil, &Error{Key: "config", Source: path + ", named by " + origin, Message: "not valid YAML: " + err.Error()}
	}
	out := map[string]sourced{}
	if len(doc.Content) == 0 {
		return out, nil
	}
	var errs []error
	flatten(path, "", doc.Content[0], out, &errs)
	return out, errors.Join(errs...)
}

func flatten(file, prefix string, n *yaml.Node, out map[string]sourced, errs *[]error) {
	where := func(n *yaml.Node) string { return fmt.Sprintf("%s:%d:%d", file, n.Line, n.Column) }
	if n.Kind != yaml.MappingNode {
		*errs = append(*errs, &Error{Key: strings.TrimSuffix(prefix, "."), Source: where(n), Message: "expected a mapping of keys"})
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := prefix + k.Value
		if _, ok := byKey[key]; ok {
			val, err := scalarValue(key, v)
			if err != nil {
				*errs = append(*errs, &Error{Key: key, Source: where(v), Message: err.Error()})
				continue
			}
			out[key] = sourced{val, where(v)}
			continue
		}
		if isSection(key) {
			flatten(file, key+".", v, out, errs)
			continue
		}
		known := keysUnder(prefix)
		msg := "unknown key; "
		if near := nearestKey(k.Value, known); near != "" {
			msg += "did you mean " + near + "? "
		}
		*errs = append(*errs, &Error{Key: key, Source: where(k), Message: msg + "known keys: " + strings.Join(known, ", ")})
	}
}

// listKeys are the settings that take several values, comma-separated in
// a flag or the environment, a list in the file.
var listKeys = map[string]bool{"github.webhook_secrets": true, "cdevents.sinks": true, "registries.insecure": true, "clusters": true,
	"outbound.allow": true}

// scalarValue turns a YAML value into the setting's string form: lists and
// mappings become the comma-separated shorthand the environment uses.
func scalarValue(key string, v *yaml.Node) (string, error) {
	// Only a setting that takes several values takes a list, and only
	// clusters a mapping: `api_token: [a, b]` became the one token "a,b",
	// which no client sends, without a word.
	switch {
	case v.Kind == yaml.SequenceNode && !listKeys[key]:
		return "", errors.New("expected one value, not a list")
	case v.Kind == yaml.MappingNode && key != "clusters":
		return "", errors.New("expected one value, not a mapping")
	}
	switch v.Kind {
	case yaml.ScalarNode:
		return v.Value, nil
	case yaml.SequenceNode:
		var parts []string
		for _, c := range v.Content {
			if c.Kind != yaml.ScalarNode {
				return "", errors.New("expected a list of strings")
			}
			// The list becomes the environment's comma-separated form, so
			// an item with a comma would silently become two values (a
			// webhook secret that then matches no delivery).
			if strings.Contains(c.Value, ",") {
				return "", fmt.Errorf("item %d holds a comma, which cannot be part of a value of %s: choose one without", len(parts)+1, key)
			}
			parts = append(parts, c.Value)
		}
		return strings.Join(parts, ","), nil
	case yaml.MappingNode:
		var parts []string
		for i := 0; i+1 < len(v.Content); i += 2 {
			name, val := v.Content[i].Value, v.Content[i+1]
			values, err := mappingEntry(val)
			if err != nil {
				return "", fmt.Errorf("%s: %w", name, err)
			}
			for _, s := range values {
				parts = append(parts, name+"="+s)
			}
		}
		return strings.Join(parts, ","), nil
	}
	return "", fmt.Errorf("unexpected YAML value for %s", key)
}

// mappingEntry reads a cluster's {token: "..."}, {tokens: [...]} and
// {token_file: "/path"} (any of them together) as shorthand values.
func mappingEntry(v *yaml.Node) ([]string, error) {
	const expected = "expected {token: ...}, {tokens: [...]} or {token_file: ...}"
	// An empty token or file name became the shorthand "NAME=", which
	// was refused as not NAME=TOKEN: words of the flag's form for a
	// mistake made in the file, which named neither the key nor the fix.
	if v.Kind == yaml.ScalarNode {
		if v.Value == "" {
			return nil, errors.New("empty; " + expected)
		}
		return []string{v.Value}, nil
	}
	if v.Kind != yaml.MappingNode || len(v.Content) == 0 {
		return nil, errors.New(expected)
	}
	var out []string
	for i := 0; i+1 < len(v.Content); i += 2 {
		key, val := v.Content[i].Value, v.Content[i+1]
		switch {
		case (key == "token" || key == "token_file") && val.Kind == yaml.ScalarNode && val.Value == "":
			return nil, fmt.Errorf("%s: empty; give the cluster's token, or the path of a file holding it with token_file", key)
		case key == "token" && val.Kind == yaml.ScalarNode:
			out = append(out, val.Value)
		case key == "token_file" && val.Kind == yaml.ScalarNode:
			out = append(out, "@"+val.Value)
		case key == "tokens" && val.Kind == yaml.SequenceNode && len(val.Content) > 0:
			for _, t := range val.Content {
				if t.Kind != yaml.ScalarNode || t.Value == "" {
					return nil, errors.New("tokens: expected a list of tokens")
				}
				out = append(out, t.Value)
			}
		case key == "token" || key == "token_file" || key == "tokens":
			return nil, fmt.Errorf("%s: %s", key, expected)
		default:
			return nil, fmt.Errorf("unknown key %q; %s", key, expected)
		}
	}
	return out, nil
}

func isSection(key string) bool {
	for k := range byKey {
		if strings.HasPrefix(k, key+".") {
			return true
		}
	}
	return false
}

// nearestKey is the known key closest to word, a key of the file that is
// none, as the environment's typos are told theirs (nearestEnv): the flag's
// spelling (log-level), the environment's (webhook_secret) or a slip of a
// letter. It is "" when even the closest is too far to be a typo.
func nearestKey(word string, known []string) string {
	best, bestDist := "", max(2, len(word)/3)+1
	for _, k := range known {
		if d := suggestion.Distance(word, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

func keysUnder(prefix string) []string {
	seen := map[string]bool{}
	for k := range byKey {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		rest := strings.TrimPrefix(k, prefix)
		if i := strings.IndexByte(rest, '.'); i >= 0 {
			rest = rest[:i]
		}
		seen[rest] = true
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Defaults is the configuration with every setting at its default, for
// programs and tests that build a Config without flags or environment.
func Defaults() *Config {
	c := &Config{}
	for _, s := range settings {
		if err := s.set(c, s.Default); err != nil {
			panic(fmt.Sprintf("config: default of %s is invalid: %v", s.Key, err))
		}
	}
	c.OIDC.Audience = c.PublicURL
	return c
}
