# telastic: one image for `controller`, `agent`, `setup`, `submit` and the rest of the CLI.
#   docker build -t telastic .                        (Docker Hub's node:20-bookworm-slim)
#   docker build --build-arg BASE=my/node20 -t telastic .
# BASE is any Debian-based image with Node 20 (and npm for the build stage); tini is installed
# when it lacks it. To run workers in your own PyTorch image instead, see docs/production.md.
ARG BASE=node:20-bookworm-slim

FROM ${BASE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
# The Temporal SDK's native bridge ships builds for five platforms: keep this one's (-110 MB).
RUN npm run build && npm prune --omit=dev --no-audit --no-fund \
 && cd node_modules/@temporalio/core-bridge/releases \
 && for d in *; do [ "$d" = "$(uname -m)-unknown-linux-gnu" ] || rm -rf "$d"; done

FROM ${BASE}
# tini as PID 1: it forwards SIGTERM to telastic (which stops its workers and leaves its job in
# order) and reaps orphans. uid 10001: never root, and no clash with a base image's own users.
RUN if ! command -v tini >/dev/null; then \
      apt-get update && apt-get install -y --no-install-recommends tini && rm -rf /var/lib/apt/lists/*; \
    fi && useradd --uid 10001 --user-group --create-home --shell /usr/sbin/nologin telastic
WORKDIR /opt/telastic
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules node_modules
COPY --from=build /src/lib lib
COPY --from=build /src/bin bin
COPY --from=build /src/examples examples
USER 10001:10001
ENV NODE_ENV=production
ENTRYPOINT ["tini", "--", "node", "/opt/telastic/bin/telastic.js"]
CMD ["--help"]
