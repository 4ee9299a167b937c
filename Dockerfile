# ripcord container image: the same static binary as `make build` (CGO off,
# pure-Go SQLite, -trimpath, stripped, version stamped) on distroless static,
# running as the distroless "nonroot" user (uid/gid 65532).
#
#   make image                                   # docker build -t ripcord:$(VERSION)
#   docker run -p 8080:8080 -v ripcord-data:/data ripcord:dev
#
# Health: there is no HEALTHCHECK instruction. Distroless has no shell or curl,
# and ripcord has no health subcommand, so an exec-form HEALTHCHECK would have
# nothing to run. The health checks are the HTTP endpoints /healthz (liveness)
# and /readyz (readiness), which the Helm chart's Kubernetes probes call.

ARG GO_IMAGE=golang:1.26
ARG BASE_IMAGE=gcr.io/distroless/static-debian12:nonroot

FROM ${GO_IMAGE} AS build
WORKDIR /src
# Modules first so a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# Keep these flags in step with the Makefile's build target; deploy's tests
# check that this line carries them.
RUN CGO_ENABLED=0 GOFLAGS=-trimpath go build -ldflags "-s -w -X github.com/ripcord/ripcord/internal/version.Version=${VERSION}" -o /out/ripcord ./cmd/ripcord
# The volume's mount point, owned by nonroot so the SQLite file can be created.
RUN mkdir -p /out/data && chown 65532:65532 /out/data

FROM ${BASE_IMAGE}
COPY --from=build /out/ripcord /ripcord
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
# In a container the server must listen on every interface, and the embedded
# SQLite database lives on the volume. Override RIPCORD_DATABASE with a
# postgres:// URL to run several replicas.
ENV RIPCORD_LISTEN=0.0.0.0:8080 \
    RIPCORD_DATABASE=sqlite:///data/ripcord.db
VOLUME ["/data"]
EXPOSE 8080
ENTRYPOINT ["/ripcord"]
CMD ["serve"]
