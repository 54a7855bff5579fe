# kwp container image: two stages, both Debian 12.
#   build:   the toolchain and -dev packages; cmake Release; the unit tests must pass.
#   runtime: bookworm-slim with only the shared libraries kwp links and ca-certificates, the
#            binary, a numeric non-root user. ENTRYPOINT is the binary itself (no shell at run
#            time) and nothing is written to the root filesystem, so it runs read-only.
# `IMAGE` runs `kwp proxy`; `IMAGE demo`, `IMAGE sim ...` and `IMAGE load ...` run the others.
# Built here by scripts/image.sh (buildah, no docker engine needed); any OCI builder works.
FROM debian:bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config ca-certificates \
      libmicrohttpd-dev libgnutls28-dev libcurl4-openssl-dev libcjson-dev libssl-dev libyaml-dev zlib1g-dev \
      libcriterion-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DKWP_WERROR=ON >/dev/null \
 && cmake --build /build -j"$(nproc)" \
 && ctest --test-dir /build -R '^unit_' --output-on-failure -j"$(nproc)" \
 && strip /build/kwp

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libmicrohttpd12 libcurl4 libcjson1 libssl3 libyaml-0-2 zlib1g ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/kwp /usr/local/bin/kwp
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/kwp"]
CMD ["proxy"]
