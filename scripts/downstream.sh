#!/usr/bin/env bash
# A new user's project, outside this repository (so its .cargo/config.toml, which supplies
# protoc, does not apply): one binary on the core with `default-features = false,
# features = ["std"]`, one on `flakeid-stores` with its defaults. Both must build with no
# protoc anywhere (PROTOC names a file that does not exist) and with no warning from a
# flakeid crate. Run by .ci/run with this workspace's Cargo.lock (the versions CI tests);
# `scripts/downstream.sh --fresh` resolves anew, as `cargo add` in a new project does.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
fresh=0
[ "${1:-}" = "--fresh" ] && fresh=1
dir=$(mktemp -d /tmp/flakeid-downstream.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/src/bin"
cat >"$dir/Cargo.toml" <<EOF
[package]
name = "downstream"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
flakeid = { path = "$repo", default-features = false, features = ["std"] }
flakeid-stores = { path = "$repo/stores" }
EOF
cat >"$dir/src/bin/lean.rs" <<'EOF'
fn main() {
    let layout = flakeid::Layout::snowflake();
    let generator = flakeid::Generator::builder(layout).node(1).build().unwrap();
    println!("{}", generator.next_id().unwrap());
}
EOF
cat >"$dir/src/bin/stores.rs" <<'EOF'
fn main() {
    let options = flakeid::claim::OpenOptions::default();
    let store = flakeid_stores::open("memory:", &options).unwrap();
    println!("{}", store.url());
    for url in ["postgres://u@127.0.0.1:9/db", "zookeeper://127.0.0.1:9", "etcd://127.0.0.1:9"] {
        let _ = flakeid_stores::open(url, &options);
    }
}
EOF
[ "$fresh" -eq 1 ] || cp "$repo/Cargo.lock" "$dir/Cargo.lock"
cd "$dir"
export CARGO_TARGET_DIR="${DOWNSTREAM_TARGET_DIR:-$repo/target/downstream}"
# The one protoc a build could find would be the system's: hide it behind a path that
# does not exist, so a build that needs one fails here as it would on a fresh machine.
log=$(PROTOC=/nonexistent/protoc cargo build --bins --color never 2>&1) || {
    printf '%s\n' "$log" >&2
    echo "downstream: a new project on flakeid and flakeid-stores (defaults) does not build without protoc" >&2
    exit 1
}
if grep -E '^warning' -A6 <<<"$log" | grep -q "flakeid"; then
    printf '%s\n' "$log" >&2
    echo "downstream: a flakeid crate warns in a user's build" >&2
    exit 1
fi
"$CARGO_TARGET_DIR/debug/lean" >/dev/null
"$CARGO_TARGET_DIR/debug/stores" >/dev/null
echo "downstream: the lean core and flakeid-stores' defaults build without protoc, with no warning"
