#!/usr/bin/env bash
# layers: the core has no network client in any feature; the tool without serve has no HTTP or gRPC stack
source "$(dirname "$0")/../lib.sh"
# The generator alone (no claims) is the small crate: nothing of the claims' system crates.
if cargo tree -p flakeid --no-default-features --features std -e normal --prefix none | grep -E '^rustix '; then
    echo "the core without its claim feature pulls in rustix" >&2
    exit 1
fi
if cargo tree -p flakeid -e normal --prefix none | grep -E '^(clap|serde_json|tokio|tonic|etcd-client|zookeeper-client|tokio-postgres|signal-hook) '; then
    echo "the core crate's default build pulls in the crates above" >&2
    exit 1
fi
if cargo tree -p flakeid --all-features -e normal --prefix none | grep -E '^(etcd-client|zookeeper-client|tokio-postgres|tonic|hyper|tokio-rustls|axum) '; then
    echo "the core crate with every feature pulls in the network crates above" >&2
    exit 1
fi
if cargo tree -p flakeid-cli --no-default-features -e normal --prefix none | grep -E '^(axum|tonic|hyper|tokio-rustls) '; then
    echo "the tool without its default features pulls in the HTTP/gRPC crates above" >&2
    exit 1
fi
cargo clippy -p flakeid-cli --no-default-features -- -D warnings
cargo clippy -p flakeid-cli --no-default-features --features serve -- -D warnings
# Stores are composed once: the front ends reach etcd, ZooKeeper and PostgreSQL through flakeid-stores
# only, and the fleet kit (whose servers the stores' own tests use) through none.
for p in flakeid-cli flakeid-serve flakeid-python flakeid-node flakeid-fleet; do
    if cargo tree -p "$p" -e normal --depth 1 --prefix none | grep -E '^flakeid-(etcd|zookeeper|postgres) '; then
        echo "$p depends on a store package directly: open stores with flakeid_stores::open" >&2
        exit 1
    fi
done
# A build without a coordinator refuses its URLs and names the feature.
cargo test -p flakeid-stores --no-default-features --lib
