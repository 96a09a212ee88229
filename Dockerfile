# syntax=docker/dockerfile:1
# hookwatch: Node 24 runs the TypeScript sources directly (type stripping), so there is no compile stage;
# the stages keep the npm cache, the lockfile work and the tests out of the final image.
# The Node release the tests run on (package.json's pinned `node` devDependency): the image is built on that one,
# not on whatever node:24-slim names on the day of the build (or in a builder's cache). Change both together.
ARG NODE_IMAGE=node:24.21.0-slim

# Production dependencies only. --ignore-scripts: no runtime dependency needs an install script, and the
# `node` package's script would download a second Node.js (the base image's Node runs hookwatch).
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# Sources without tests or captured fixtures. Test support lives in collector/test, which is never copied;
# the *.test.ts files beside the sources are deleted here.
FROM ${NODE_IMAGE} AS source
WORKDIR /app
COPY collector/bin ./collector/bin
COPY collector/src ./collector/src
COPY shared/src ./shared/src
COPY dashboard/server.ts ./dashboard/server.ts
COPY dashboard/src ./dashboard/src
COPY dashboard/public ./dashboard/public
COPY deploy/docker/healthcheck.mjs ./deploy/docker/healthcheck.mjs
RUN find . -name '*.test.ts' -delete && find . -type d -name testdata -prune -exec rm -rf {} +

FROM ${NODE_IMAGE}
# Inside a container hookwatch listens on every interface; the data volume holds SQLite and the forward queue.
# Node's ExperimentalWarning (type stripping for the dashboard) would be the only non-JSON line on stderr.
ENV NODE_ENV=production \
    NODE_OPTIONS=--disable-warning=ExperimentalWarning \
    HOOKWATCH_OTLP_HTTP_ADDR=0.0.0.0:4318 \
    HOOKWATCH_OTLP_GRPC_ADDR=0.0.0.0:4317 \
    HOOKWATCH_HTTP_ADDR=0.0.0.0:9318 \
    HOOKWATCH_DB=/data/hookwatch.db \
    HOOKWATCH_FORWARD_QUEUE_PATH=/data/forward-queue.db
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=deps /app/package.json ./package.json
COPY --from=source /app ./
# The official image's `node` user (uid 1000), numeric so Kubernetes can verify runAsNonRoot.
RUN mkdir -p /data && chown 1000:1000 /data
USER 1000:1000
VOLUME ["/data"]
# 4317 OTLP/gRPC, 4318 OTLP/HTTP, 9318 API, dashboard, /healthz, /readyz and /metrics.
EXPOSE 4317 4318 9318
# Slim has no curl: the check asks /healthz with Node's http (https with http.tls) on the port HOOKWATCH_HTTP_ADDR names.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 CMD ["node", "deploy/docker/healthcheck.mjs"]
# node is PID 1 and gets SIGTERM itself (no npm or shell in between): hookwatch drains and exits 0.
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "collector/src/main.ts"]
CMD ["serve"]
