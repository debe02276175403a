# syntax=docker/dockerfile:1
#
# agent-pages: a release build in the Rust image, run from a slim Debian image as a
# non-root user with its SQLite file on the /data volume.
#
#   docker build -t agent-pages .                # the runtime image (last stage)
#   docker build --target load -t agent-pages-load .
#
# docker-compose.yml builds both; see docs/deploy.md.

FROM rust:1.95-slim-bookworm AS builder
WORKDIR /src
# Debug info is for local profiling (Cargo.toml); the image does not need it.
ENV CARGO_PROFILE_RELEASE_DEBUG=0
COPY Cargo.toml Cargo.lock ./
# actix-http with the HEAD framing fix ([patch.crates-io] in Cargo.toml).
COPY vendor ./vendor
COPY src ./src
# Cargo parses every target the manifest declares, also for `--bin`: a declared bench
# or example missing here fails the build before anything compiles.
COPY benches ./benches
COPY examples ./examples
COPY migrations ./migrations
COPY templates ./templates
COPY static ./static
# The registry and target dir live in BuildKit caches, so a code change does not
# rebuild every dependency; the binary is copied out because the cache is not part
# of the layer.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin agent-pages \
    && install -D -m 0755 target/release/agent-pages /out/agent-pages

# The `load` profile of docker-compose.yml: wrk and the load-test script.
FROM debian:bookworm-slim AS load
# Unpinned on purpose: bookworm's security updates replace exact versions, which
# would break a pinned build; the suite itself is pinned by the base image.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends wrk \
    && rm -rf /var/lib/apt/lists/*
COPY scripts/loadtest.sh scripts/loadtest.lua /usr/local/bin/
RUN useradd --system --uid 10002 --no-create-home --shell /usr/sbin/nologin loadtest
USER 10002
ENTRYPOINT ["/usr/local/bin/loadtest.sh"]

FROM debian:bookworm-slim AS runtime
# A fixed uid so the named volume's files keep their owner across image rebuilds;
# /data is created and owned here so a new named volume starts with that owner.
RUN groupadd --system --gid 10001 agent-pages \
    && useradd --system --uid 10001 --gid agent-pages --home-dir /data \
       --no-create-home --shell /usr/sbin/nologin agent-pages \
    && mkdir -p /data \
    && chown agent-pages:agent-pages /data
COPY --from=builder /out/agent-pages /usr/local/bin/agent-pages
COPY deploy/healthcheck.sh /usr/local/bin/agent-pages-healthcheck
ENV AGENT_PAGES_BIND=0.0.0.0:8080 \
    AGENT_PAGES_DATABASE=/data/agent-pages.sqlite3 \
    RUST_LOG=info
VOLUME ["/data"]
EXPOSE 8080
USER 10001:10001
WORKDIR /data
# The demo corpus (63,681 pages) is imported on the first start: give it time.
HEALTHCHECK --interval=10s --timeout=5s --start-period=120s --retries=3 \
    CMD ["/usr/local/bin/agent-pages-healthcheck"]
ENTRYPOINT ["/usr/local/bin/agent-pages"]
CMD ["serve", "--demo"]
