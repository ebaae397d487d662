# Multi-stage build: a static rcm binary on a minimal base, run as non-root,
# with its bbolt store on a volume.
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
