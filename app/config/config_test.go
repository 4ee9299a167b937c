package config

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func load(t *testing.T, args []string, env map[string]string) (*Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	Register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return Load(fs, func(k string) string { return env[k] })
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaultsWhenNothingIsSet(t *testing.T) {
	c, err := load(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:8080" || c.Database != "sqlite://ripcord.db" || c.PublicURL != "http://127.0.0.1:8080" ||
		c.GitHub.APIURL != "https://api.github.com/" || c.GitHub.AppConfigured() {
		t.Errorf("defaults: %+v", c)
	}
}

func TestPrecedenceIsFlagThenEnvThenFileThenDefault(t *testing.T) {
	file := writeFile(t, "ripcord.yml", "listen: 127.0.0.1:1001\ndatabase: sqlite://file.db\npublic_url: https://file.example\n")
	env := map[string]string{"RIPCORD_CONFIG": file, "RIPCORD_LISTEN": "127.0.0.1:1002", "RIPCORD_DATABASE": "sqlite://env.db"}
	c, err := load(t, []string{"--listen", "127.0.0.1:1003"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:1003" {
		t.Errorf("flag lost to something else: listen = %s", c.Listen)
	}
	if c.Database != "sqlite://env.db" {
		t.Errorf("env lost to the file: database = %s", c.Database)
	}
	if c.PublicURL != "https://file.example" {
		t.Errorf("file lost to the default: public_url = %s", c.PublicURL)
	}
}

// A server moved to another port prints links to that port: public_url
// follows listen unless it is set itself. A listen of port 0 takes any
// free port, and what came from listen takes the port the server was
// given (bound); a public_url or audience that was set stays as it was.
func TestPublicURLFollowsListenUnlessSet(t *testing.T) {
	cases := []struct {
		name  string
		args  []string
		env   map[string]string
		bound string // the address listened on, when the test says
		want  string
		aud   string // oidc.audience; "": want
	}{
		{"listen only", []string{"--listen", "127.0.0.1:9090"}, nil, "", "http://127.0.0.1:9090", ""},
		{"all interfaces", nil, map[string]string{"RIPCORD_LISTEN": "0.0.0.0:9091"}, "", "http://127.0.0.1:9091", ""},
		{"no host", []string{"--listen", ":9092"}, nil, "", "http://127.0.0.1:9092", ""},
		{"IPv6 host", []string{"--listen", "[::1]:9093"}, nil, "", "http://[::1]:9093", ""},
		{"public_url set too", []string{"--listen", "127.0.0.1:9094"}, map[string]string{"RIPCORD_PUBLIC_URL": "https://ripcord.example"}, "", "https://ripcord.example", ""},
		{"a port given, listened on", []string{"--listen", "127.0.0.1:9095"}, nil, "127.0.0.1:9095", "http://127.0.0.1:9095", ""},
		{"a host name given, listened on", []string{"--listen", "localhost:9096"}, nil, "127.0.0.1:9096", "http://localhost:9096", ""},
		{"any port", []string{"--listen", "127.0.0.1:0"}, nil, "127.0.0.1:43117", "http://127.0.0.1:43117", ""},
		{"all interfaces, any port", []string{"--listen", ":0"}, nil, "[::]:43118", "http://127.0.0.1:43118", ""},
		{"any port, public_url set", []string{"--listen", "127.0.0.1:0"}, map[string]string{"RIPCORD_PUBLIC_URL": "https://ripcord.example"},
			"127.0.0.1:43119", "https://ripcord.example", ""},
		{"any port, audience set", []string{"--listen", "127.0.0.1:0"}, map[string]string{"RIPCORD_OIDC_AUDIENCE": "ripcord"},
			"127.0.0.1:43120", "http://127.0.0.1:43120", "ripcord"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := load(t, tc.args, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if tc.bound != "" {
				c.ListeningOn(tc.bound)
			}
			if tc.aud == "" {
				tc.aud = tc.want
			}
			if c.PublicURL != tc.want || c.OIDC.Audience != tc.aud {
				t.Errorf("public_url %s, oidc.audience %s; want %s and %s", c.PublicURL, c.OIDC.Audience, tc.want, tc.aud)
			}
		})
	}
}

func TestFileSectionsListsAndClusters(t *testing.T) {
	tokenFile := writeFile(t, "tok", "secret-from-file\n")
	file := writeFile(t, "c.yml", `
github:
  webhook_secrets: [new, old]
  api_url: https://ghe.example/api/v3
clusters:
  prod-eu: {token: tok1}
  prod-us: {token_file: `+tokenFile+`}
`)
	c, err := load(t, []string{"--config", file}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.GitHub.WebhookSecrets, ",") != "new,old" {
		t.Errorf("webhook_secrets = %v", c.GitHub.WebhookSecrets)
	}
	if c.GitHub.APIURL != "https://ghe.example/api/v3/" {
		t.Errorf("api_url = %s, want a trailing slash added", c.GitHub.APIURL)
	}
	if got := clusterTokens(t, c); got["prod-eu"] != "tok1" || got["prod-us"] != "secret-from-file" {
		t.Errorf("clusters = %v", got)
	}
}

// clusterTokens are each cluster's tokens now, comma-separated.
func clusterTokens(t *testing.T, c *Config) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, toks := range c.Clusters {
		list, err := toks.List()
		if err != nil {
			t.Errorf("cluster %s: %v", name, err)
		}
		out[name] = strings.Join(list, ",")
	}
	return out
}

func TestEnvClusterShorthand(t *testing.T) {
	c, err := load(t, nil, map[string]string{"RIPCORD_CLUSTERS": "prod-eu=tok1,prod-us=tok2"})
	if err != nil {
		t.Fatal(err)
	}
	if got := clusterTokens(t, c); len(got) != 2 || got["prod-us"] != "tok2" {
		t.Errorf("clusters = %v", got)
	}
}

func TestPrivateKeyFromPEMTextOrFile(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	pemText := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	path := writeFile(t, "app.pem", pemText)
	for name, v := range map[string]string{"PEM text": pemText, "file path": path} {
		c, err := load(t, nil, map[string]string{"RIPCORD_GITHUB_APP_ID": "42", "RIPCORD_GITHUB_PRIVATE_KEY": v})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !c.GitHub.AppConfigured() || c.GitHub.AppID != 42 {
			t.Errorf("%s: app not configured: %+v", name, c.GitHub)
		}
	}
}

// GitHub signs App JWTs with RSA only. A PKCS#8 key of another kind was
// accepted at start and failed at the first call to GitHub; a SEC1 EC key
// was refused with Go's own hint to call ParseECPrivateKey. Both are now
// refused at load, naming the key kind and where to get the right one;
// an RSA key in PKCS#8 is still taken.
func TestPrivateKeyMustBeTheAppsRSAKey(t *testing.T) {
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	pkcs8 := func(k any) string {
		b, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: b}))
	}
	sec1, err := x509.MarshalECPrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	refused := map[string]struct{ pem, kind string }{
		"ECDSA in PKCS#8":   {pkcs8(ecKey), "ECDSA"},
		"Ed25519 in PKCS#8": {pkcs8(edKey), "Ed25519"},
		"EC in SEC1":        {string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1})), `"EC PRIVATE KEY"`},
	}
	for name, k := range refused {
		t.Run(name, func(t *testing.T) {
			_, err := load(t, nil, map[string]string{"RIPCORD_GITHUB_APP_ID": "42", "RIPCORD_GITHUB_PRIVATE_KEY": k.pem})
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range []string{"github.private_key (from environment variable RIPCORD_GITHUB_PRIVATE_KEY)", k.kind, "RSA", "App's settings page"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "ParseECPrivateKey") {
				t.Errorf("error %q gives Go's hint to a user", err)
			}
		})
	}
	c, err := load(t, nil, map[string]string{"RIPCORD_GITHUB_APP_ID": "42", "RIPCORD_GITHUB_PRIVATE_KEY": pkcs8(rsaKey)})
	if err != nil || !c.GitHub.AppConfigured() {
		t.Errorf("an RSA key in PKCS#8: %v", err)
	}
}

func TestHalfConfiguredAppNamesTheMissingHalf(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	pemText := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	file := writeFile(t, "ripcord.yml", "github:\n  app_id: 42\n")
	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"id from the file", map[string]string{"RIPCORD_CONFIG": file},
			"github.app_id is set (from " + file + ":2:11) but github.private_key (--github-private-key, RIPCORD_GITHUB_PRIVATE_KEY) is not"},
		{"key alone", map[string]string{"RIPCORD_GITHUB_PRIVATE_KEY": pemText},
			"github.private_key is set (from environment variable RIPCORD_GITHUB_PRIVATE_KEY) but github.app_id (--github-app-id, RIPCORD_GITHUB_APP_ID) is not"},
		{"both", map[string]string{"RIPCORD_CONFIG": file, "RIPCORD_GITHUB_PRIVATE_KEY": pemText}, ""},
		{"neither", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := load(t, nil, c.env)
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.HalfConfiguredApp()
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("HalfConfiguredApp() = %q, want %q", got, c.want)
			}
		})
	}
}

// An empty settings file, or one whose lines are all commented out, holds
// no settings; it was refused as "not valid YAML: EOF", which stopped serve.
func TestEmptySettingsFileHoldsNoSettings(t *testing.T) {
	for name, content := range map[string]string{"empty": "", "comments only": "# listen: 0.0.0.0:8080\n# api_token: ...\n"} {
		t.Run(name, func(t *testing.T) {
			c, err := load(t, nil, map[string]string{"RIPCORD_CONFIG": writeFile(t, "ripcord.yml", content), "RIPCORD_LISTEN": "127.0.0.1:1001"})
			if err != nil {
				t.Fatal(err)
			}
			if c.Listen != "127.0.0.1:1001" || c.Database != "sqlite://ripcord.db" {
				t.Errorf("listen %q, database %q: want the environment's and the default", c.Listen, c.Database)
			}
		})
	}
}

// registries.auth is read at load as the gates read it: a file that is not
// a docker config.json started the server, and every registry gate then
// failed with the error, far from the setting.
func TestRegistriesAuthIsReadAtLoad(t *testing.T) {
	cases := []struct {
		name, content string
		want          []string
	}{
		{"not JSON", "-----BEGIN RSA PRIVATE KEY-----\n", []string{"registries.auth (from environment variable RIPCORD_REGISTRIES_AUTH)", "is not a docker config.json"}},
		{"an auth that is not user:password", `{"auths": {"registry.example": {"auth": "bm9jb2xvbg=="}}}`, []string{"registries.auth", "not base64 of user:password"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := load(t, nil, map[string]string{"RIPCORD_REGISTRIES_AUTH": writeFile(t, "config.json", c.content)})
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "registries.auth: registries.auth") {
				t.Errorf("error %q names the key twice", err)
			}
		})
	}
	good := writeFile(t, "config.json", `{"auths": {"registry.example": {"username": "u", "password": "p"}}}`)
	if c, err := load(t, nil, map[string]string{"RIPCORD_REGISTRIES_AUTH": good}); err != nil || c.Registries.Auth != good {
		t.Errorf("a docker config.json: %v", err)
	}
}

func TestBadSettingsNameTheKeyAndWhatIsExpected(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		file string
		want []string
	}{
		{"listen without port", map[string]string{"RIPCORD_LISTEN": "localhost"}, "", []string{"listen", "RIPCORD_LISTEN", "host:port"}},
		{"database of an unknown kind", map[string]string{"RIPCORD_DATABASE": "mysql://x"}, "", []string{"database", "sqlite://FILE"}},
		{"app id not a number", map[string]string{"RIPCORD_GITHUB_APP_ID": "abc"}, "", []string{"github.app_id", "positive number"}},
		{"private key neither PEM nor file", map[string]string{"RIPCORD_GITHUB_PRIVATE_KEY": "/nonexistent.pem"}, "", []string{"github.private_key", "PEM"}},
		{"public url not absolute", map[string]string{"RIPCORD_PUBLIC_URL": "ripcord.example"}, "", []string{"public_url", "absolute http(s) URL"}},
		{"unknown key in the file", nil, "listen: 127.0.0.1:1\nlisten_addr: x\n", []string{"listen_addr", "unknown key", ":2:1"}},
		{"unknown key in a section", nil, "github:\n  app_idd: 3\n", []string{"github.app_idd", "app_id"}},
		{"empty secret in the list", map[string]string{"RIPCORD_GITHUB_WEBHOOK_SECRET": "a,,b"}, "", []string{"github.webhook_secrets", "empty secret"}},
		{"a comma inside one secret of the file's list", nil, "github:\n  webhook_secrets: [new-secret, \"old,secret\"]\n", []string{"github.webhook_secrets", ":2:", "item 2 holds a comma"}},
		// A one-value setting written as a list became that list joined
		// by commas: the api_token "a,b", which no client sends.
		{"a list for the one api_token", nil, "api_token: [old-token, new-token]\n", []string{"api_token", ":1:12", "expected one value, not a list"}},
		{"a mapping for listen", nil, "listen: {host: 127.0.0.1, port: 8080}\n", []string{"listen", ":1:9", "expected one value, not a mapping"}},
		{"a mapping for the webhook secrets", nil, "github:\n  webhook_secrets: {new: a}\n", []string{"github.webhook_secrets", ":2:20", "not a mapping"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range c.env {
				env[k] = v
			}
			if c.file != "" {
				env["RIPCORD_CONFIG"] = writeFile(t, "bad.yml", c.file)
			}
			_, err := load(t, nil, env)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if strings.Count(err.Error(), "\n") > 0 {
				t.Errorf("one bad setting gave several lines: %q", err)
			}
		})
	}
}

// A database setting that is not a URL is refused with a line that says
// what to write instead, and that line, which goes to the log, never holds
// the password: a libpq keyword/value string was echoed whole, password=
// and all, and told only that it was not a URL.
func TestBadDatabaseSettingSaysWhatToWriteAndHidesThePassword(t *testing.T) {
	cases := []struct {
		name  string
		value string
		want  []string
	}{
		{"libpq keyword/value string", "host=db dbname=ripcord user=ripcord password=hunter2",
			[]string{"database (from environment variable RIPCORD_DATABASE)", "keyword/value", "postgres://USER:PASS@HOST:PORT/DB"}},
		{"URL of another database", "mysql://ripcord:hunter2@db:3306/ripcord",
			[]string{"database (from environment variable RIPCORD_DATABASE)", "mysql://ripcord:xxxxx@db:3306/ripcord", "sqlite://FILE"}},
		{"URL that does not parse", "mysql://ripcord:hunter2@db:port/ripcord",
			[]string{"database", "@db:port/ripcord", "sqlite://FILE"}},
		// The value is shown as typed: "sqlite://" was shown as "sqlite:".
		{"sqlite URL that names no file", "sqlite://",
			[]string{`"sqlite://" is not a database URL`, "sqlite://FILE"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := load(t, nil, map[string]string{"RIPCORD_DATABASE": c.value})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}

func TestEveryFlagIsDocumentedInTheReference(t *testing.T) {
	ref := Reference()
	for _, s := range Settings() {
		for _, want := range []string{"`" + s.Key + "`", "`--" + s.Flag() + "`", "`" + s.Env + "`"} {
			if !strings.Contains(ref, want) {
				t.Errorf("reference lacks %s", want)
			}
		}
	}
}

var updateREADME = flag.Bool("update-readme", false, "rewrite README.md's configuration table")

// TestREADMEReference keeps the README's configuration table equal to the
// settings the code defines.
func TestREADMEReference(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	begin := strings.Index(text, "<!-- config-reference:begin")
	end := strings.Index(text, "<!-- config-reference:end -->")
	if begin < 0 || end < begin {
		t.Fatal("README.md has no config-reference markers")
	}
	start := strings.Index(text[begin:], "\n") + begin + 1
	if *updateREADME {
		if err := os.WriteFile("../../README.md", []byte(text[:start]+Reference()+text[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if text[start:end] != Reference() {
		t.Errorf("README.md's configuration table is stale: run go test ./app/config -run TestREADMEReference -update-readme")
	}
}

func TestDefaultsMatchLoadingNothing(t *testing.T) {
	loaded, err := load(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := Defaults()
	if d.Listen != loaded.Listen || d.StallAfter != loaded.StallAfter || d.Retention != loaded.Retention ||
		d.OIDC != loaded.OIDC || d.GitHub.APIURL != loaded.GitHub.APIURL {
		t.Errorf("Defaults() = %+v, loading nothing = %+v", d, loaded)
	}
}

// A configuration file that cannot be read or parsed is reported with where
// its path came from: the --config flag or RIPCORD_CONFIG (the flag wins).
func TestAnUnreadableFileNamesWhereItsPathCameFrom(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.yml")
	broken := writeFile(t, "broken.yml", "listen: [unclosed\n")
	cases := []struct {
		name    string
		args    []string
		env     map[string]string
		want    []string
		notWant string
	}{
		{"missing, named by RIPCORD_CONFIG", nil, map[string]string{"RIPCORD_CONFIG": missing},
			[]string{"environment variable RIPCORD_CONFIG", missing}, "--config"},
		{"missing, named by --config", []string{"--config", missing}, nil,
			[]string{"flag --config", missing}, "RIPCORD_CONFIG"},
		{"missing, --config wins over RIPCORD_CONFIG", []string{"--config", missing}, map[string]string{"RIPCORD_CONFIG": broken},
			[]string{"flag --config", missing}, "RIPCORD_CONFIG"},
		{"not YAML, named by RIPCORD_CONFIG", nil, map[string]string{"RIPCORD_CONFIG": broken},
			[]string{"environment variable RIPCORD_CONFIG", broken, "not valid YAML"}, "--config"},
		{"not YAML, named by --config", []string{"--config", broken}, nil,
			[]string{"flag --config", broken, "not valid YAML"}, "RIPCORD_CONFIG"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := load(t, c.args, c.env)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), c.notWant) {
				t.Errorf("error %q names %s, which did not name the file", err, c.notWant)
			}
		})
	}
}

// A token file is read again when it changes; one caught empty or gone
// keeps the tokens it held (an agent is not locked out by a file being
// replaced), and says so once.
func TestClusterTokenFileIsReadAgainWhenItChanges(t *testing.T) {
	path := writeFile(t, "tokens", "old\nnew\n")
	c, err := load(t, nil, map[string]string{"RIPCORD_CLUSTERS": "prod-eu=@" + path + ",prod-eu=static"})
	if err != nil {
		t.Fatal(err)
	}
	toks := c.Clusters["prod-eu"]
	list := func() ([]string, error) {
		l, err := toks.List()
		slices.Sort(l)
		return l, err
	}
	if got, err := list(); err != nil || !slices.Equal(got, []string{"new", "old", "static"}) {
		t.Fatalf("tokens %v (%v), want new, old and static", got, err)
	}
	if err := os.WriteFile(path, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := list(); err == nil || !slices.Equal(got, []string{"new", "old", "static"}) {
		t.Errorf("file emptied: tokens %v (%v), want the ones it held and an error", got, err)
	}
	if _, err := list(); err != nil {
		t.Errorf("the same failure reported twice: %v", err)
	}
	if err := os.WriteFile(path, []byte("newest\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := list(); err != nil || !slices.Equal(got, []string{"newest", "static"}) {
		t.Errorf("file rewritten: tokens %v (%v), want newest and static", got, err)
	}
}

// The README's example settings file loads as it is written: its keys are
// settings and its values have their shapes, so renaming or reshaping a
// setting cannot leave the example behind. The files it names under
// /run/secrets/ are made in a temporary folder (a private key for a .pem,
// a token otherwise).
func TestREADMEExampleSettingsFileLoads(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), "\nAn example file:\n\n```yaml\n")
	if !ok {
		t.Fatal("the README shows no example settings file (\"An example file:\" and a yaml block)")
	}
	example, _, _ := strings.Cut(after, "```")
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	dir := t.TempDir()
	files := 0
	example = regexp.MustCompile(`/run/secrets/[A-Za-z0-9._-]+`).ReplaceAllStringFunc(example, func(p string) string {
		content := "a-token\n"
		if strings.HasSuffix(p, ".pem") {
			content = string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
		}
		local := filepath.Join(dir, filepath.Base(p))
		if err := os.WriteFile(local, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		files++
		return local
	})
	if files == 0 {
		t.Fatal("the README's example names no file under /run/secrets/: the key file and token file it shows are gone")
	}
	c, err := load(t, nil, map[string]string{"RIPCORD_CONFIG": writeFile(t, "ripcord.yml", example)})
	if err != nil {
		t.Fatalf("the README's example settings file does not load: %v\n%s", err, example)
	}
	if !c.GitHub.AppConfigured() || len(c.Clusters) == 0 {
		t.Errorf("the example configures no App or no cluster: %+v", c.GitHub)
	}
}

// An unknown key of the settings file names the key it most likely meant,
// as a misspelt RIPCORD_* variable does: the flag's spelling (log-level),
// the environment variable's (webhook_secret, from
// RIPCORD_GITHUB_WEBHOOK_SECRET) or a slip of a letter was answered with
// the list of every key, left to be searched for the one meant.
func TestUnknownFileKeyNamesTheKeyMeant(t *testing.T) {
	cases := []struct {
		file, want string
	}{
		{"log-level: debug\n", "bad.yml:1:1): unknown key; did you mean log_level? known keys: api_token,"},
		{"lisen: 127.0.0.1:8080\n", "did you mean listen?"},
		{"github:\n  webhook_secret: s3cret\n", "bad.yml:2:3): unknown key; did you mean webhook_secrets? known keys: api_url, app_id, private_key, webhook_secrets"},
		{"rollout:\n  max-parallel: 4\n", "did you mean max_parallel?"},
	}
	for _, c := range cases {
		env := map[string]string{"RIPCORD_CONFIG": writeFile(t, "bad.yml", c.file)}
		_, err := load(t, nil, env)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("file %q: error %v; want it to say %q", c.file, err, c.want)
		}
	}
	// A key far from every known one is no typo: no guess, only the list.
	env := map[string]string{"RIPCORD_CONFIG": writeFile(t, "bad.yml", "frobnicate: 1\n")}
	if _, err := load(t, nil, env); err == nil || strings.Contains(err.Error(), "did you mean") || !strings.Contains(err.Error(), "known keys: api_token") {
		t.Errorf("a key far from every known one: error %v; want the known keys and no guess", err)
	}
}

// An empty token or token file of a cluster in the settings file is named
// as the file's key with what to write: it was refused in the words of the
// flag's shorthand ("prod-eu=" is not NAME=TOKEN or NAME=@FILE), which
// the file never held.
func TestAnEmptyClusterTokenInTheFileNamesItsKey(t *testing.T) {
	cases := []struct {
		name, file string
		want       []string
	}{
		{"an empty token", "clusters:\n  prod-eu: {token: \"\"}\n", []string{"clusters (from ", ":2:", "prod-eu: token: empty", "token_file"}},
		{"an empty token file", "clusters:\n  prod-eu: {token_file: \"\"}\n", []string{"clusters (from ", ":2:", "prod-eu: token_file: empty"}},
		{"an empty shorthand", "clusters:\n  prod-eu: \"\"\n", []string{"clusters (from ", ":2:", "prod-eu: empty", "{token: ...}"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := load(t, nil, map[string]string{"RIPCORD_CONFIG": writeFile(t, "ripcord.yml", c.file)})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "NAME=TOKEN") {
				t.Errorf("error %q speaks of the flag's form, not the file's", err)
			}
		})
	}
}
