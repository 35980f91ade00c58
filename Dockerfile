# schedlab in a container, for sharded sweeps on a cluster (docs/scale-out.md).
#   docker build -t schedlab .
#   docker run --rm schedlab sweep chat --backend sim --vary cpus=1,2 --runs 2
# The simulator needs nothing from the host. The real-kernel backend measures the kernel the
# container shares with its host, and needs the privileges docs/scale-out.md lists.

FROM rust:bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p schedlab

FROM debian:bookworm-slim
COPY --from=build /src/target/release/schedlab /usr/local/bin/schedlab
WORKDIR /results
ENTRYPOINT ["schedlab"]
