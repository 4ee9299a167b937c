package deploy

import (
	"context"
	"debug/elf"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ripcord/ripcord/internal/testnet"
)

// The flags the Dockerfile's build stage must use, the same as `make build`.
var imageBuildFlags = []string{
	"CGO_ENABLED=0",
	"GOFLAGS=-trimpath",
	`-ldflags "-s -w -X github.com/ripcord/ripcord/internal/version.Version=${VERSION}"`,
	"./cmd/ripcord",
}

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDockerfileBuildsStaticNonRootServer(t *testing.T) {
	t.Parallel()
	df := readRepoFile(t, "Dockerfile")
	var build string
	for _, line := range strings.Split(df, "\n") {
		if strings.HasPrefix(line, "RUN ") && strings.Contains(line, "go build") {
			build = line
		}
	}
	if build == "" {
		t.Fatal("Dockerfile: no RUN line with go build")
	}
	for _, flag := range imageBuildFlags {
		if !strings.Contains(build, flag) {
			t.Errorf("Dockerfile build line lacks %s (make build uses it): %s", flag, build)
		}
	}
	for _, want := range []string{
		"FROM ${GO_IMAGE} AS build", "ARG GO_IMAGE=golang:1.26",
		"ARG BASE_IMAGE=gcr.io/distroless/static-debian12:nonroot",
		"USER 65532:65532", "RIPCORD_LISTEN=0.0.0.0:8080", "RIPCORD_DATABASE=sqlite:///data/ripcord.db",
		`VOLUME ["/data"]`, "EXPOSE 8080", `ENTRYPOINT ["/ripcord"]`, `CMD ["serve"]`,
		"COPY --from=build --chown=65532:65532 /out/data /data",
	} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	mk := readRepoFile(t, "Makefile")
	for _, want := range []string{"CGO_ENABLED=0 $(GO) build", "GOFLAGS ?= -trimpath", "LDFLAGS := -s -w -X github.com/ripcord/ripcord/internal/version.Version="} {
		if !strings.Contains(mk, want) {
			t.Errorf("Makefile's build no longer has %q: update the Dockerfile and this test together", want)
		}
	}
}

// buildImageBinary builds cmd/ripcord the way the Dockerfile does.
func buildImageBinary(t *testing.T, version string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "ripcord")
	cmd := exec.Command("go", "build", "-ldflags",
		"-s -w -X github.com/ripcord/ripcord/internal/version.Version="+version, "-o", out, "./cmd/ripcord")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-trimpath")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

func TestImageBinaryIsStatic(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildImageBinary(t, "deploy-test")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("binary has a %v program header: it is dynamically linked and will not run on distroless static", p.Type)
		}
	}
	if f.Section(".dynamic") != nil {
		t.Error("binary has a .dynamic section")
	}
	if f.Section(".symtab") != nil {
		t.Error("binary has a symbol table: -s was not applied")
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "deploy-test") {
		t.Errorf("ripcord version = %q, %v; want the version stamped with -X", out, err)
	}
}

// The image runs `ripcord serve` with nothing but its environment: no config
// file, no flags, an empty working directory.
func TestImageBinaryServesFromEmptyDirAndStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildImageBinary(t, "deploy-test")
	dir := t.TempDir()
	addr := testnet.FreeAddr(t)
	cmd := exec.Command(bin, "serve")
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "RIPCORD_DATABASE=sqlite://ripcord.db", "RIPCORD_LISTEN=" + addr}
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Kill is harmless once the process has exited; it only matters when
	// the test fails before SIGTERM.
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	if err := waitReady(context.Background(), "http://"+addr+"/readyz", exited); err != nil {
		t.Fatalf("%v\nlogs:\n%s", err, logs.String())
	}
	if st, err := os.Stat(filepath.Join(dir, "ripcord.db")); err != nil || st.Size() == 0 {
		t.Errorf("database file not created in the working directory: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("ripcord serve after SIGTERM: %v (want exit 0)\nlogs:\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("ripcord serve still running 30s after SIGTERM\nlogs:\n%s", logs.String())
	}
}

// waitReady polls url until it answers 200, the process exits or a minute
// passes (a cold SQLite migration takes well under that).
func waitReady(ctx context.Context, url string, exited <-chan error) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	last := "no answer"
	for {
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case err := <-exited:
			return fmt.Errorf("ripcord serve exited before %s answered 200: %v", url, err)
		case <-ctx.Done():
			return fmt.Errorf("%s never answered 200 (last: %s)", url, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
