#!/usr/bin/env bash
# servers for the fleet tests (Debian: etcd-server, zookeeper with Java 17, postgresql 15), and the service's tools (systemd-analyze, prlimit, taskset)
source "$(dirname "$0")/../lib.sh"
# No protobuf-compiler: the etcd client's build runs scripts/protoc (.cargo/config.toml),
# which takes the system's protoc or the one protoc-bin-vendored ships.
if ! command -v etcd >/dev/null || ! command -v java >/dev/null \
    || ! ls /usr/share/java/zookeeper*.jar >/dev/null 2>&1 \
    || ! command -v systemd-analyze >/dev/null || ! command -v prlimit >/dev/null \
    || ! command -v taskset >/dev/null || ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server zookeeper postgresql systemd util-linux >/dev/null
fi
systemd-analyze --version | sed -n 1p
etcd --version | sed -n 1p  # sed reads to the end: head would close the pipe early (SIGPIPE, exit 141 under pipefail)
java -version 2>&1 | sed -n 1p
ls /usr/share/java/zookeeper-3*.jar
/usr/lib/postgresql/*/bin/postgres --version
