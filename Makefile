# ripcord — build, test, lint and benchmark. Every Go command uses the same
# flags (-trimpath) so the build cache is shared between them.
GO      ?= go
GOFLAGS ?= -trimpath
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/ripcord/ripcord/internal/version.Version=$(VERSION)
export GOFLAGS

.PHONY: build test test-short lint bench bench-ingest run clean

## build: the ripcord binary in bin/ (static: CGO off, pure-Go SQLite)
build:
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o bin/ripcord ./cmd/ripcord

## test: the whole suite with the race detector, on SQLite and on a throwaway
## PostgreSQL server (installed from Debian's packages if missing); the
## cluster tests run a real kube-apiserver, built once into ~/.cache/ripcord
## (about 11 minutes on 2 cores the first time), and the Helm chart is linted,
## rendered and dry-run applied with helm v3.22 (built once, ~3 minutes); the
## releases page is tested in Debian's chromium (installed if missing, as root);
## Go's build cache is trimmed first when the disk is low (scripts/trim-gocache.sh).
## -race turns on checkptr, which checks every unsafe.Pointer conversion; in
## the pure-Go SQLite (modernc.org/..., C translated to Go) that was a fifth
## of the suite's CPU, so it is off for those packages only: the race
## detector itself, and checkptr in every other package, stay on.
## -p 4 -parallel 4: four packages, and four parallel tests in each, at a
## time; go test's default is the number of cores, and at two the machine
## was 60 % busy, the end-to-end tests waiting on timers and child
## processes (PERFORMANCE.md, "The test suite").
RACE_GCFLAGS := modernc.org/...=-d=checkptr=0
test:
	./scripts/trim-gocache.sh
	nice -n 10 ./scripts/k8s-binaries.sh
	./scripts/helm.sh
	./scripts/chromium.sh
	./scripts/with-postgres.sh $(GO) test -race -gcflags='$(RACE_GCFLAGS)' -p 4 -parallel 4 -count=1 -timeout 30m ./...

## test-short: the suite without the child-process and PostgreSQL parts
test-short:
	$(GO) test -short -count=1 ./...

## lint: formatting and vet
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## bench: the Go benchmarks (figures printed, nothing asserted)
bench:
	WITH_POSTGRES_DURABLE=1 ./scripts/with-postgres.sh $(GO) test -run '^$$' -bench . -benchtime 2000x ./...

## bench-ingest: the webhook intake load command (a)-(d), see README
bench-ingest: build
	$(GO) build -o bin/ripcord-bench ./cmd/ripcord-bench
	WITH_POSTGRES_DURABLE=1 ./scripts/with-postgres.sh ./bin/ripcord-bench ingest --ripcord bin/ripcord

## run: ripcord serve on the embedded SQLite default
run: build
	./bin/ripcord serve

clean:
	rm -rf bin

## image: the container image (Dockerfile) with docker or podman, tagged
## ripcord:$(VERSION); set IMAGE to change the name
IMAGE ?= ripcord:$(VERSION)
ENGINE ?= $(shell command -v docker 2>/dev/null || command -v podman 2>/dev/null)
.PHONY: image
image:
	@if [ -z "$(ENGINE)" ]; then echo "make image: no container engine (docker or podman) on PATH"; exit 1; fi
	$(ENGINE) build --build-arg VERSION=$(VERSION) -t $(IMAGE) .
