package ghclient

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v66/github"
)

// FileAt reads path at ref of repository ("owner/name"; an empty ref is
// the default branch). A file that does not exist there is nil content and
// no error; a directory is an error.
func FileAt(ctx context.Context, gh *github.Client, repository, path, ref string) ([]byte, error) {
	owner, name, _ := strings.Cut(repository, "/")
	var opts *github.RepositoryContentGetOptions
	if ref != "" {
		opts = &github.RepositoryContentGetOptions{Ref: ref}
	}
	f, _, resp, err := gh.Repositories.GetContents(ctx, owner, name, path, opts)
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s at %q in %s: %w", path, ref, repository, err)
	}
	if f == nil {
		return nil, fmt.Errorf("read %s at %q in %s: it is a directory", path, ref, repository)
	}
	s, err := f.GetContent()
	if err != nil {
		return nil, fmt.Errorf("read %s at %q in %s: %w", path, ref, repository, err)
	}
	return []byte(s), nil
}
