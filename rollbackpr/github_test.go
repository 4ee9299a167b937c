package rollbackpr_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/ripcord/ripcord/rollbackpr"
)

// recorded is one request as the fake API server saw it.
type recorded struct {
	method, path, query string
	body                any // decoded JSON, nil when there was none
}

// apiServer answers every request with one canned status and body, and records it.
func apiServer(t *testing.T, status int, response string) (rollbackpr.GitHub, *[]recorded) {
	t.Helper()
	var got []recorded
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		rec := recorded{method: r.Method, path: r.URL.EscapedPath(), query: r.URL.RawQuery}
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &rec.body); err != nil {
				t.Errorf("request body is not JSON: %q", raw)
			}
		}
		got = append(got, rec)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, response)
	}))
	t.Cleanup(srv.Close)
	client := github.NewClient(srv.Client())
	base, err := url.Parse(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	client.BaseURL = base
	return rollbackpr.NewGitHub(client), &got
}

func jsonOf(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad JSON in test: %v", err)
	}
	return v
}

func TestNewGitHubRequests(t *testing.T) {
	ctx := context.Background()
	release := "release:\n  id: rb-1\n"
	// GitHub wraps base64 content at 60 columns; go-github must cope.
	encoded := base64.StdEncoding.EncodeToString([]byte(release))
	wrapped := encoded[:10] + `\n` + encoded[10:]
	tests := []struct {
		name                string
		status              int
		response            string
		call                func(g rollbackpr.GitHub) (any, error)
		method, path, query string
		body                string // JSON; empty for none
		want                any
	}{
		{
			name: "GetRef reads one ref", status: 200,
			response: `{"ref":"refs/heads/main","object":{"sha":"b45e","type":"commit"}}`,
			call: func(g rollbackpr.GitHub) (any, error) {
				r, err := g.GetRef(ctx, "acme", "gitops", "heads/main")
				return r.GetObject().GetSHA(), err
			},
			method: "GET", path: "/repos/acme/gitops/git/ref/heads/main", want: "b45e",
		},
		{
			name: "GetContents reads a file at a commit", status: 200,
			response: `{"type":"file","encoding":"base64","path":"apps/checkout/prod/release.yaml","sha":"b10b","content":"` + wrapped + `"}`,
			call: func(g rollbackpr.GitHub) (any, error) {
				c, sha, err := g.GetContents(ctx, "acme", "gitops", "apps/checkout/prod/release.yaml", "b45e")
				return string(c) + "|" + sha, err
			},
			method: "GET", path: "/repos/acme/gitops/contents/apps/checkout/prod/release.yaml", query: "ref=b45e",
			want: release + "|b10b",
		},
		{
			name: "GetCommit reads a branch head's tree, parents and message", status: 200,
			response: `{"sha":"c0c0","parents":[{"sha":"b45e"}],"commit":{"message":"Rollback: x","tree":{"sha":"7ree"}}}`,
			call: func(g rollbackpr.GitHub) (any, error) {
				c, err := g.GetCommit(ctx, "acme", "gitops", "main")
				return c.GetSHA() + "|" + c.GetCommit().GetTree().GetSHA() + "|" + c.Parents[0].GetSHA() + "|" + c.GetCommit().GetMessage(), err
			},
			method: "GET", path: "/repos/acme/gitops/commits/main", want: "c0c0|7ree|b45e|Rollback: x",
		},
		{
			name: "CreateRef creates a branch at a commit", status: 201,
			response: `{"ref":"refs/heads/release-rollback-prod-1a2b3c4d","object":{"sha":"b45e"}}`,
			call: func(g rollbackpr.GitHub) (any, error) {
				r, err := g.CreateRef(ctx, "acme", "gitops", &github.Reference{Ref: github.String("refs/heads/release-rollback-prod-1a2b3c4d"), Object: &github.GitObject{SHA: github.String("b45e")}})
				return r.GetRef(), err
			},
			method: "POST", path: "/repos/acme/gitops/git/refs",
			body: `{"ref":"refs/heads/release-rollback-prod-1a2b3c4d","sha":"b45e"}`,
			want: "refs/heads/release-rollback-prod-1a2b3c4d",
		},
		{
			name: "UpdateRef force-moves a branch", status: 200,
			response: `{"ref":"refs/heads/release-rollback-prod-1a2b3c4d","object":{"sha":"b45e"}}`,
			call: func(g rollbackpr.GitHub) (any, error) {
				r, err := g.UpdateRef(ctx, "acme", "gitops", &github.Reference{Ref: github.String("refs/heads/release-rollback-prod-1a2b3c4d"), Object: &github.GitObject{SHA: github.String("b45e")}}, true)
				return r.GetObject().GetSHA(), err
			},
			method: "PATCH", path: "/repos/acme/gitops/git/refs/heads/release-rollback-prod-1a2b3c4d",
			body: `{"sha":"b45e","force":true}`, want: "b45e",
		},
		{
			name: "CreateBlob sends the bytes as base64", status: 201,
			response: `{"sha":"b10b","url":"https://api.github.com/repos/acme/gitops/git/blobs/b10b"}`,
			call: func(g rollbackpr.GitHub) (any, error) {
				return g.CreateBlob(ctx, "acme", "gitops", []byte(release))
			},
			method: "POST", path: "/repos/acme/gitops/git/blobs",
			body: `{"content":"` + encoded + `","encoding":"base64"}`, want: "b10b",
		},
		{
			name: "CreateTree replaces one path of a base tree", status: 201,
			response: `{"sha":"7ree","tree":[]}`,
			call: func(g rollbackpr.GitHub) (any, error) {
				t, err := g.CreateTree(ctx, "acme", "gitops", "ba5e7ree", []*github.TreeEntry{{
					Path: github.String("apps/checkout/prod/release.yaml"), Mode: github.String("100644"), Type: github.String("blob"), SHA: github.String("b10b"),
				}})
				return t.GetSHA(), err
			},
			method: "POST", path: "/repos/acme/gitops/git/trees",
			body: `{"base_tree":"ba5e7ree","tree":[{"path":"apps/checkout/prod/release.yaml","mode":"100644","type":"blob","sha":"b10b"}]}`,
			want: "7ree",
		},
		{
			name: "CreateCommit writes a commit with one parent", status: 201,
			response: `{"sha":"c0c0","message":"Rollback: x","tree":{"sha":"7ree"},"parents":[{"sha":"b45e"}]}`,
			call: func(g rollbackpr.GitHub) (any, error) {
				c, err := g.CreateCommit(ctx, "acme", "gitops", &github.Commit{
					Message: github.String("Rollback: x"), Tree: &github.Tree{SHA: github.String("7ree")}, Parents: []*github.Commit{{SHA: github.String("b45e")}},
				})
				return c.GetSHA(), err
			},
			method: "POST", path: "/repos/acme/gitops/git/commits",
			body: `{"message":"Rollback: x","tree":"7ree","parents":["b45e"]}`, want: "c0c0",
		},
		{
			name: "FindPullRequest filters by owner:branch and open state, any base", status: 200,
			response: `[{"number":7,"head":{"ref":"release-rollback-prod-1a2b3c4d"},"base":{"ref":"main"}}]`,
			call: func(g rollbackpr.GitHub) (any, error) {
				pr, err := g.FindPullRequest(ctx, "acme", "gitops", "release-rollback-prod-1a2b3c4d", "main")
				return pr.GetNumber(), err
			},
			method: "GET", path: "/repos/acme/gitops/pulls",
			query: "head=acme%3Arelease-rollback-prod-1a2b3c4d&state=open", want: 7,
		},
		{
			name: "FindPullRequest ignores a pull request for another head", status: 200,
			response: `[{"number":3,"head":{"ref":"feature"},"base":{"ref":"main"}}]`,
			call: func(g rollbackpr.GitHub) (any, error) {
				pr, err := g.FindPullRequest(ctx, "acme", "gitops", "release-rollback-prod-1a2b3c4d", "main")
				return pr == nil, err
			},
			method: "GET", path: "/repos/acme/gitops/pulls",
			query: "head=acme%3Arelease-rollback-prod-1a2b3c4d&state=open", want: true,
		},
		{
			name: "FindPullRequest prefers the pull request into base", status: 200,
			response: `[{"number":9,"head":{"ref":"release-rollback-prod-1a2b3c4d"},"base":{"ref":"release-1"}},` +
				`{"number":7,"head":{"ref":"release-rollback-prod-1a2b3c4d"},"base":{"ref":"main"}}]`,
			call: func(g rollbackpr.GitHub) (any, error) {
				pr, err := g.FindPullRequest(ctx, "acme", "gitops", "release-rollback-prod-1a2b3c4d", "main")
				return pr.GetNumber(), err
			},
			method: "GET", path: "/repos/acme/gitops/pulls",
			query: "head=acme%3Arelease-rollback-prod-1a2b3c4d&state=open", want: 7,
		},
		{
			name: "FindPullRequest finds one retargeted to another base", status: 200,
			response: `[{"number":9,"head":{"ref":"release-rollback-prod-1a2b3c4d"},"base":{"ref":"release-1"}}]`,
			call: func(g rollbackpr.GitHub) (any, error) {
				pr, err := g.FindPullRequest(ctx, "acme", "gitops", "release-rollback-prod-1a2b3c4d", "main")
				return pr.GetNumber(), err
			},
			method: "GET", path: "/repos/acme/gitops/pulls",
			query: "head=acme%3Arelease-rollback-prod-1a2b3c4d&state=open", want: 9,
		},
		{
			name: "CreatePullRequest opens a pull request", status: 201,
			response: `{"number":7,"html_url":"https://github.com/acme/gitops/pull/7"}`,
			call: func(g rollbackpr.GitHub) (any, error) {
				pr, err := g.CreatePullRequest(ctx, "acme", "gitops", &github.NewPullRequest{
					Title: github.String("Rollback: checkout prod to 1a2b3c4d"), Head: github.String("release-rollback-prod-1a2b3c4d"),
					Base: github.String("main"), Body: github.String("body"),
				})
				return pr.GetHTMLURL(), err
			},
			method: "POST", path: "/repos/acme/gitops/pulls",
			body: `{"title":"Rollback: checkout prod to 1a2b3c4d","head":"release-rollback-prod-1a2b3c4d","base":"main","body":"body"}`,
			want: "https://github.com/acme/gitops/pull/7",
		},
		{
			name: "EditPullRequest changes title and body", status: 200,
			response: `{"number":7}`,
			call: func(g rollbackpr.GitHub) (any, error) {
				pr, err := g.EditPullRequest(ctx, "acme", "gitops", 7, &github.PullRequest{Title: github.String("t"), Body: github.String("b")})
				return pr.GetNumber(), err
			},
			method: "PATCH", path: "/repos/acme/gitops/pulls/7", body: `{"title":"t","body":"b"}`, want: 7,
		},
		{
			name: "AddLabels labels through the issues API", status: 200,
			response: `[{"name":"ripcord:rollback"}]`,
			call: func(g rollbackpr.GitHub) (any, error) {
				return nil, g.AddLabels(ctx, "acme", "gitops", 7, []string{"ripcord:rollback"})
			},
			method: "POST", path: "/repos/acme/gitops/issues/7/labels", body: `["ripcord:rollback"]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, reqs := apiServer(t, tt.status, tt.response)
			got, err := tt.call(g)
			if err != nil {
				t.Fatalf("call failed: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("returned %#v, want %#v", got, tt.want)
			}
			if len(*reqs) != 1 {
				t.Fatalf("%d requests, want 1: %+v", len(*reqs), *reqs)
			}
			r := (*reqs)[0]
			if r.method != tt.method || r.path != tt.path || r.query != tt.query {
				t.Errorf("request = %s %s?%s, want %s %s?%s", r.method, r.path, r.query, tt.method, tt.path, tt.query)
			}
			var wantBody any
			if tt.body != "" {
				wantBody = jsonOf(t, tt.body)
			}
			if !reflect.DeepEqual(r.body, wantBody) {
				t.Errorf("body = %#v, want %#v", r.body, wantBody)
			}
		})
	}
}

func TestNewGitHubErrors(t *testing.T) {
	ctx := context.Background()
	ref := &github.Reference{Ref: github.String("refs/heads/x"), Object: &github.GitObject{SHA: github.String("b45e")}}
	newPR := &github.NewPullRequest{Title: github.String("t"), Head: github.String("x"), Base: github.String("main")}
	tests := []struct {
		name     string
		status   int
		response string
		call     func(g rollbackpr.GitHub) error
		is       error // nil: must be none of the package errors
	}{
		{"missing ref is ErrNotFound", 404, `{"message":"Not Found"}`,
			func(g rollbackpr.GitHub) error { _, err := g.GetRef(ctx, "acme", "gitops", "heads/x"); return err }, rollbackpr.ErrNotFound},
		{"missing file is ErrNotFound", 404, `{"message":"Not Found"}`,
			func(g rollbackpr.GitHub) error {
				_, _, err := g.GetContents(ctx, "acme", "gitops", "a.yaml", "main")
				return err
			}, rollbackpr.ErrNotFound},
		{"existing branch is ErrAlreadyExists", 422, `{"message":"Reference already exists"}`,
			func(g rollbackpr.GitHub) error { _, err := g.CreateRef(ctx, "acme", "gitops", ref); return err }, rollbackpr.ErrAlreadyExists},
		{"existing pull request is ErrAlreadyExists", 422,
			`{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"A pull request already exists for acme:x."}]}`,
			func(g rollbackpr.GitHub) error {
				_, err := g.CreatePullRequest(ctx, "acme", "gitops", newPR)
				return err
			}, rollbackpr.ErrAlreadyExists},
		{"empty repository is ErrConflict", 409, `{"message":"Git Repository is empty."}`,
			func(g rollbackpr.GitHub) error {
				_, err := g.CreateBlob(ctx, "acme", "gitops", []byte("x"))
				return err
			}, rollbackpr.ErrConflict},
		{"unknown tree is ErrRejected", 422, `{"message":"Tree SHA does not exist"}`,
			func(g rollbackpr.GitHub) error {
				_, err := g.CreateCommit(ctx, "acme", "gitops", &github.Commit{Message: github.String("m"), Tree: &github.Tree{SHA: github.String("7ree")}})
				return err
			}, rollbackpr.ErrRejected},
		{"base_tree that is not a tree is ErrRejected", 422, `{"message":"base_tree is not a valid tree"}`,
			func(g rollbackpr.GitHub) error {
				_, err := g.CreateTree(ctx, "acme", "gitops", "c0c0", nil)
				return err
			}, rollbackpr.ErrRejected},
		{"unknown base branch is ErrRejected", 422, `{"message":"No commit found for SHA: trunk"}`,
			func(g rollbackpr.GitHub) error { _, err := g.GetCommit(ctx, "acme", "gitops", "trunk"); return err }, rollbackpr.ErrRejected},
		{"no commits between is ErrRejected", 422,
			`{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"No commits between main and x"}]}`,
			func(g rollbackpr.GitHub) error {
				_, err := g.CreatePullRequest(ctx, "acme", "gitops", newPR)
				return err
			}, rollbackpr.ErrRejected},
		{"server error is a plain failure", 502, `{"message":"Bad Gateway"}`,
			func(g rollbackpr.GitHub) error { _, err := g.GetRef(ctx, "acme", "gitops", "heads/x"); return err }, nil},
		{"a directory is not a release file", 200, `[{"type":"file","name":"a.yaml"}]`,
			func(g rollbackpr.GitHub) error {
				_, _, err := g.GetContents(ctx, "acme", "gitops", "apps", "main")
				return err
			}, nil},
		{"a file over 1 MB comes without content", 200, `{"type":"file","encoding":"none","content":"","sha":"b10b"}`,
			func(g rollbackpr.GitHub) error {
				_, _, err := g.GetContents(ctx, "acme", "gitops", "big.yaml", "main")
				return err
			}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, _ := apiServer(t, tt.status, tt.response)
			err := tt.call(g)
			if err == nil {
				t.Fatal("no error")
			}
			for _, sentinel := range []error{rollbackpr.ErrNotFound, rollbackpr.ErrAlreadyExists, rollbackpr.ErrConflict, rollbackpr.ErrRejected} {
				if errors.Is(err, sentinel) != (sentinel == tt.is) {
					t.Errorf("errors.Is(%v, %v) = %v", err, sentinel, errors.Is(err, sentinel))
				}
			}
			if tt.status >= 400 {
				msg := jsonOf(t, tt.response).(map[string]any)["message"].(string)
				if !strings.Contains(err.Error(), msg) {
					t.Errorf("error %q lost GitHub's message %q", err, msg)
				}
			}
		})
	}
}
