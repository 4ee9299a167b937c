package app

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/internal/testdb"
)

// The api_token and the clusters' tokens are compared through
// secret.Equal, which compares fixed-size digests: a
// subtle.ConstantTimeCompare of the tokens themselves returns at once on
// a length that differs, and so tells the token's length to whoever times
// it. A comparison added here without the helper fails this test.
func TestSecretsAreNotComparedByLength(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "subtle" && sel.Sel.Name == "ConstantTimeCompare" {
				t.Errorf("%s: subtle.ConstantTimeCompare leaks the length of what it compares; use secret.Equal", fset.Position(sel.Pos()))
			}
			return true
		})
	}
}

// Only the token itself opens the API and a cluster's routes: not its
// prefix, not the token with more after it, not one that differs in its
// last byte; a cluster's second token (a rotation) is as good as its
// first.
func TestBearerTokensMatchOnlyWhole(t *testing.T) {
	t.Parallel()
	ts := startServerWith(t, testdb.MigratedURL(t, "sqlite"), Options{}, func(c *configT) {
		c.Clusters = map[string]*config.Tokens{
			"prod-eu": config.StaticTokens("tok-eu-old-secret", "tok-eu-new-secret"),
			"prod-us": config.StaticTokens("tok-us-secret"),
		}
	})
	for _, c := range []struct {
		name, method, path, token string
		want                      int
	}{
		{"the api_token", "GET", "/api/v1/deliveries", testToken, http.StatusOK},
		{"the api_token less its last byte", "GET", "/api/v1/deliveries", testToken[:len(testToken)-1], http.StatusUnauthorized},
		{"the api_token and one byte more", "GET", "/api/v1/deliveries", testToken + "n", http.StatusUnauthorized},
		{"the api_token with its last byte changed", "GET", "/api/v1/deliveries", testToken[:len(testToken)-1] + "X", http.StatusUnauthorized},
		{"a one-byte token", "GET", "/api/v1/deliveries", "t", http.StatusUnauthorized},
		// A release opened with the api_token (releases.go's own check).
		{"the api_token opening a release", "POST", "/api/v1/releases", testToken, http.StatusBadRequest},
		{"a longer api_token opening a release", "POST", "/api/v1/releases", testToken + "n", http.StatusUnauthorized},
		// The fact {} is refused 400 once the token is accepted.
		{"the cluster's first token", "POST", "/api/v1/facts/prod-eu", "tok-eu-old-secret", http.StatusBadRequest},
		{"the cluster's second token", "POST", "/api/v1/facts/prod-eu", "tok-eu-new-secret", http.StatusBadRequest},
		{"a cluster token less its last byte", "POST", "/api/v1/facts/prod-eu", "tok-eu-new-secre", http.StatusUnauthorized},
		{"a cluster token and one byte more", "POST", "/api/v1/facts/prod-eu", "tok-eu-new-secrets", http.StatusUnauthorized},
		{"another cluster's token", "POST", "/api/v1/facts/prod-eu", "tok-us-secret", http.StatusForbidden},
		{"another cluster's token and one byte more", "POST", "/api/v1/facts/prod-eu", "tok-us-secrets", http.StatusUnauthorized},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, ts.URL+c.path, strings.NewReader(`{}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+c.token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("%s %s: status %d, want %d: %s", c.method, c.path, resp.StatusCode, c.want, body)
			}
		})
	}
}
