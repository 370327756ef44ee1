# The `ksched` command in a small image, for `ksched sweep --emit-k8s` Jobs (see the README's
# `ksched sweep` section). Build from the repository root:
#   docker build -t REGISTRY/ksched:TAG . && docker push REGISTRY/ksched:TAG
# Stage 1 compiles with the Rust toolchain; stage 2 is distroless (glibc, no shell, no package
# manager) running as the numeric non-root user 65532, which the emitted Job also asks for.
FROM docker.io/library/rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p ksched-bench --bin ksched \
 && install -D -m 0755 target/release/ksched /out/ksched

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/ksched /usr/local/bin/ksched
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/ksched"]
CMD ["--help"]
