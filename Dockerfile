# syntax=docker/dockerfile:1
#
# jetflow images, one build for every target:
#
#   docker build -t jetflow .                                  # the command (default target)
#   docker build --target worker-exec -t jetflow-worker-exec . # jetflow + sh + Python 3 + the example scripts
#   docker build --target worker-node -t jetflow-worker-node . # the Node.js example worker
#
# The binary is static (CGO_ENABLED=0), so any base image runs it; Alpine
# is used for a shell and wget in health checks. docker-compose.yml uses
# all three targets.

ARG GO_VERSION=1.26
ARG ALPINE_VERSION=3.22
ARG NODE_VERSION=20
ARG PYTHON_VERSION=3.12

FROM golang:${GO_VERSION}-alpine AS build
# The build context has no .git, so the go command records no commit:
# docker build --build-arg JETFLOW_COMMIT=$(git rev-parse HEAD) names it
# for `jetflow version`.
ARG JETFLOW_COMMIT=
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X github.com/jetflow/jetflow/cmd/jetflow/cli.commit=${JETFLOW_COMMIT}" -o /out/jetflow ./cmd/jetflow

# Exec workers: `jetflow worker exec` runs a program per invocation, so
# the image carries the interpreters the example scripts need.
FROM python:${PYTHON_VERSION}-alpine${ALPINE_VERSION} AS worker-exec
RUN adduser -D -u 10001 jetflow
COPY --from=build /out/jetflow /usr/local/bin/jetflow
COPY examples/workers/shell/ /app/
WORKDIR /app
USER jetflow
ENTRYPOINT ["jetflow", "worker", "exec"]

# The Node.js worker, from its lock file.
FROM node:${NODE_VERSION}-alpine${ALPINE_VERSION} AS worker-node
WORKDIR /app
COPY examples/workers/node/package.json examples/workers/node/package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY examples/workers/node/worker.js examples/workers/node/tasks.js examples/workers/node/publish.js ./
USER node
ENV JETFLOW_READY_FILE=/tmp/jetflow-worker-ready
HEALTHCHECK --interval=5s --timeout=3s --start-period=30s CMD test -f /tmp/jetflow-worker-ready
ENTRYPOINT ["node", "worker.js"]

# The command: serve, dispatcher, deploy, start, status, worker exec, ...
FROM alpine:${ALPINE_VERSION} AS jetflow
RUN apk add --no-cache ca-certificates \
 && adduser -D -u 10001 jetflow \
 && mkdir -p /data && chown jetflow /data
COPY --from=build /out/jetflow /usr/local/bin/jetflow
COPY examples/order.json examples/order-scenario.json /usr/share/jetflow/examples/
USER jetflow
# serve keeps the embedded server's store here; dispatchers keep nothing.
ENV JETFLOW_DATA=/data
# 4222: NATS clients of `serve`; 7070: /healthz, /readyz, /metrics.
EXPOSE 4222 7070
ENTRYPOINT ["jetflow"]
CMD ["--help"]
