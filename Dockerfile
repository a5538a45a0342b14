# fleetlimit as a static binary in an empty image.
#   docker build -t fleetlimit --build-arg VERSION=v0.1.0 .
#   docker run -p 8080:8080 -p 8081:8081 fleetlimit
# The image listens on all interfaces inside the container; mount your own
# envoyproxy/ratelimit YAML over /etc/fleetlimit/ratelimit.yaml.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=devel
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.buildVersion=${VERSION}" -o /out/fleetlimit ./cmd/fleetlimit

FROM scratch
COPY --from=build /out/fleetlimit /fleetlimit
COPY examples/ratelimit.yaml /etc/fleetlimit/ratelimit.yaml
USER 65534:65534
EXPOSE 8080 8081
ENTRYPOINT ["/fleetlimit", "serve", "--config", "/etc/fleetlimit/ratelimit.yaml", "--grpc-addr", "0.0.0.0:8081", "--http-addr", "0.0.0.0:8080"]
