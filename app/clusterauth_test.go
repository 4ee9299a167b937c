package app

import (
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/internal/testdb"
)

// loadClusters loads the clusters setting as `ripcord serve` does, from
// the environment and a YAML file.
func loadClusters(t *testing.T, env map[string]string) *config.Config {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	config.Register(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(fs, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// inventoryStatus posts an empty inventory of prod-eu with token: the
// cheapest request a cluster token guards.
func (ts *testServer) inventoryStatus(t *testing.T, token string) int {
	t.Helper()
	inv := map[string]any{"observed_at": time.Now().UTC(), "sources": []string{"deployment"}, "uids": []string{}}
	return ts.post(t, "/api/v1/facts/prod-eu/inventory", token, inv, nil)
}

// A cluster's token is rotated without downtime: during the rotation the
// server takes the old token and the new one (several tokens per cluster,
// in the environment's shorthand, in YAML, or one per line in a token
// file), and a token file is read again when it changes, so dropping the
// old token needs no restart either.
func TestClusterTokenRotationNeedsNoRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		// As Kubernetes updates a mounted Secret: a new file renamed over.
		if err := os.WriteFile(p+".tmp", []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(p+".tmp", p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tokenFile := write("prod-eu.tokens", "tok-old\ntok-new\n")
	yamlFile := write("ripcord.yml", "clusters:\n  prod-eu: {tokens: [tok-old, tok-new]}\n  prod-us: {token: tok-us}\n")
	dbURL := testdb.MigratedURL(t, "sqlite")
	for name, env := range map[string]map[string]string{
		"shorthand, the cluster named twice": {"RIPCORD_CLUSTERS": "prod-eu=tok-old,prod-eu=tok-new,prod-us=tok-us"},
		"YAML tokens list":                   {"RIPCORD_CONFIG": yamlFile},
		"token file, one token per line":     {"RIPCORD_CLUSTERS": "prod-eu=@" + tokenFile + ",prod-us=tok-us"},
	} {
		t.Run(name, func(t *testing.T) {
			loaded := loadClusters(t, env)
			ts := startServerWith(t, dbURL, Options{}, func(c *configT) { c.Clusters = loaded.Clusters })
			for _, tok := range []string{"tok-old", "tok-new"} {
				if code := ts.inventoryStatus(t, tok); code != http.StatusOK {
					t.Errorf("%s: %d, want 200: both tokens hold during a rotation", tok, code)
				}
			}
			if code := ts.inventoryStatus(t, "tok-us"); code != http.StatusForbidden {
				t.Errorf("prod-us's token: %d, want 403", code)
			}
		})
	}
	t.Run("token file changed while the server runs", func(t *testing.T) {
		loaded := loadClusters(t, map[string]string{"RIPCORD_CLUSTERS": "prod-eu=@" + tokenFile})
		ts := startServerWith(t, dbURL, Options{}, func(c *configT) { c.Clusters = loaded.Clusters })
		if code := ts.inventoryStatus(t, "tok-old"); code != http.StatusOK {
			t.Fatalf("tok-old before the change: %d, want 200", code)
		}
		write("prod-eu.tokens", "tok-new\n")
		if code := ts.inventoryStatus(t, "tok-old"); code != http.StatusUnauthorized {
			t.Errorf("tok-old after it was removed from the file: %d, want 401", code)
		}
		if code := ts.inventoryStatus(t, "tok-new"); code != http.StatusOK {
			t.Errorf("tok-new: %d, want 200", code)
		}
	})
}

// With no cluster configured, every route a cluster token guards says so
// and names the setting: "wrong token" sent a newcomer trying the agent
// to check a token the server never had. It stays 401, so an agent keeps
// its facts spooled until the server is configured.
func TestClusterRoutesSayNoClusterIsConfigured(t *testing.T) {
	t.Parallel()
	ts := startServer(t, testdb.URL(t, "sqlite"), Options{})
	// The actions' long poll shares the check (clusterauth.go).
	for _, path := range []string{"/api/v1/facts/prod-eu", "/api/v1/facts/prod-eu/inventory", "/api/v1/clusters/prod-eu/actions/a1"} {
		t.Run(path, func(t *testing.T) {
			status, msg := postAs(t, ts, path, "tok-eu", "{}", false)
			if status != http.StatusUnauthorized || !strings.Contains(msg, "no cluster is configured on this server") ||
				!strings.Contains(msg, "RIPCORD_CLUSTERS=prod-eu=TOKEN") {
				t.Errorf("%d %q, want 401 saying no cluster is configured and naming the clusters setting", status, msg)
			}
		})
	}
}
