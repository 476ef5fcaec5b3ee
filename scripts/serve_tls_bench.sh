#!/usr/bin/env bash
# The cost of TLS on the service, for BENCHMARKS.md: the same `flakeid serve` plain and
# with --tls-cert (an ECDSA P-256 certificate and the CA that signs it, made here with
# openssl), each
# pinned to core 0 with the load generator on core 1; single-ID requests as fast as they
# go (64 keep-alive connections) and at a fixed 50,000 requests/s, then 64 connections
# that each make a new TLS handshake per request.
# Needs oha (`cargo install oha`), openssl and taskset. Usage: scripts/serve_tls_bench.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
cargo build --release -q -p flakeid-cli
bin=target/release/flakeid
dir=$(mktemp -d)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=bench CA" -keyout "$dir/ca-key.pem" -out "$dir/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
    -keyout "$dir/key.pem" -out "$dir/req.pem" 2>/dev/null
# The service reads a key only other users cannot read.
chmod 600 "$dir/key.pem"
printf 'basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$dir/ext"
openssl x509 -req -in "$dir/req.pem" -CA "$dir/ca.pem" -CAkey "$dir/ca-key.pem" -CAcreateserial \
    -days 2 -extfile "$dir/ext" -out "$dir/cert.pem" 2>/dev/null
pick() { grep -E "Requests/sec|50.00%|99.00%|99.90%|Success rate" || true; }

taskset -c 0 "$bin" serve --node 1 --shards 1 --listen 127.0.0.1:18280 2>/dev/null &
plain=$!
taskset -c 0 "$bin" serve --node 2 --shards 1 --listen 127.0.0.1:18281 \
    --tls-cert "$dir/cert.pem" --tls-key "$dir/key.pem" 2>/dev/null &
tls=$!
trap 'kill $plain $tls 2>/dev/null || true; rm -rf "$dir"' EXIT
sleep 1

for mode in plain tls; do
    if [ $mode = plain ]; then url=http://127.0.0.1:18280; tlsargs=(); else url=https://127.0.0.1:18281; tlsargs=(--cacert "$dir/ca.pem"); fi
    echo "== $mode: GET /v1/id, keep-alive, 64 connections, as fast as it goes"
    taskset -c 1 oha -z "${secs}s" -c 64 --no-tui "${tlsargs[@]}" "$url/v1/id" | pick
    echo "== $mode: GET /v1/id at a fixed 50,000 requests/s, 8 connections"
    taskset -c 1 oha -z "${secs}s" -c 8 -q 50000 --no-tui "${tlsargs[@]}" "$url/v1/id" | pick
    echo "== $mode: GET /v1/id, a new connection per request, 64 at a time"
    taskset -c 1 oha -z "${secs}s" -c 64 --disable-keepalive --no-tui "${tlsargs[@]}" "$url/v1/id" | pick
done
