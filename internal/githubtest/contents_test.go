package githubtest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/google/go-github/v66/github"
)

func get(t *testing.T, url string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func TestContentsRevalidateWithETags(t *testing.T) {
	s := NewServer(t)
	s.PutFile("acme/shop", "main", ".github/ripcord.yml", "version: 1\n")
	url := s.URL() + "repos/acme/shop/contents/.github/ripcord.yml"

	first, _ := get(t, url, nil)
	etag := first.Header.Get("ETag")
	if first.StatusCode != http.StatusOK || etag == "" {
		t.Fatalf("first read: %d, ETag %q", first.StatusCode, etag)
	}
	again, body := get(t, url, map[string]string{"If-None-Match": etag})
	if again.StatusCode != http.StatusNotModified || body != "" {
		t.Errorf("unchanged file: %d %q, want an empty 304", again.StatusCode, body)
	}
	s.PutFile("acme/shop", "main", ".github/ripcord.yml", "version: 2\n")
	changed, _ := get(t, url, map[string]string{"If-None-Match": etag})
	if changed.StatusCode != http.StatusOK || changed.Header.Get("ETag") == etag {
		t.Errorf("changed file: %d with ETag %q, want 200 and a new ETag", changed.StatusCode, changed.Header.Get("ETag"))
	}
	raw, text := get(t, url, map[string]string{"Accept": "application/vnd.github.raw+json"})
	if raw.StatusCode != http.StatusOK || text != "version: 2\n" {
		t.Errorf("raw read: %d %q", raw.StatusCode, text)
	}
}

func TestContentsByRefAndMissing(t *testing.T) {
	s := NewServer(t)
	client := newClient(t, s)
	ctx := context.Background()
	s.PutFile("acme/shop", "main", "deploy/a.yaml", "main\n")
	s.PutFile("acme/shop", "release/v2", "deploy/a.yaml", "v2\n")
	cases := []struct {
		name, path, ref, want string
		wantStatus            int
	}{
		{"default branch", "deploy/a.yaml", "", "main\n", 200},
		{"a branch holding a slash", "deploy/a.yaml", "release/v2", "v2\n", 200},
		{"a file that does not exist", "deploy/b.yaml", "", "", 404},
		{"a ref that does not exist", "deploy/a.yaml", "nope", "", 404},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file, _, resp, err := client.Repositories.GetContents(ctx, "acme", "shop", c.path, &github.RepositoryContentGetOptions{Ref: c.ref})
			if resp == nil || resp.StatusCode != c.wantStatus {
				t.Fatalf("status %v (err %v), want %d", resp, err, c.wantStatus)
			}
			if c.wantStatus == 200 {
				if text, _ := file.GetContent(); text != c.want {
					t.Errorf("content %q, want %q", text, c.want)
				}
			}
		})
	}
	_, dir, _, err := client.Repositories.GetContents(ctx, "acme", "shop", "deploy", nil)
	if err != nil || len(dir) != 1 || dir[0].GetName() != "a.yaml" || dir[0].GetType() != "file" {
		t.Errorf("directory listing %+v, %v", dir, err)
	}
}

func TestContentsAPICommits(t *testing.T) {
	s := NewServer(t)
	client := newClient(t, s)
	ctx := context.Background()
	s.PutFile("acme/shop", "main", "README.md", "hi\n")
	created, _, err := client.Repositories.CreateFile(ctx, "acme", "shop", "deploy/release.yaml", &github.RepositoryContentFileOptions{
		Message: github.String("add release"), Content: []byte("image: v1\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = client.Repositories.UpdateFile(ctx, "acme", "shop", "deploy/release.yaml", &github.RepositoryContentFileOptions{
		Message: github.String("without sha"), Content: []byte("image: v2\n"),
	})
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("updating without sha: %v, want 422", err)
	}
	_, _, err = client.Repositories.UpdateFile(ctx, "acme", "shop", "deploy/release.yaml", &github.RepositoryContentFileOptions{
		Message: github.String("bump"), Content: []byte("image: v2\n"), SHA: created.Content.SHA,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := s.FileAt("acme/shop", "main", "deploy/release.yaml"); got != "image: v2\n" {
		t.Errorf("file is %q", got)
	}
	if got := len(s.Files("acme/shop", "main")); got != 2 {
		t.Errorf("%d files on main, want 2", got)
	}
}
