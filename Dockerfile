# Multi-stage build: a static rcm binary on a minimal base, run as non-root,
# with its bbolt store on a volume. It listens on all interfaces, so rcm
# requires a token (README "Security") and refuses to start without one:
#   docker run -e RCM_AUTH_TOKEN=$(openssl rand -hex 32) -p 127.0.0.1:8787:8787 rcm
# Clients send it as X-RCM-Auth (proxied calls, when RCM_UPSTREAM_KEY is set)
# or Authorization: Bearer (/rcm/...).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/rcm ./cmd/rcm \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/rcm /usr/local/bin/rcm
COPY --from=build --chown=65532:65532 /out/data /data
ENV RCM_DB=/data/rcm.db
VOLUME ["/data"]
EXPOSE 8787
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/rcm"]
CMD ["serve", "--listen", "0.0.0.0:8787"]
