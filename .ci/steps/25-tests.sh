#!/usr/bin/env bash
# tests (README: cargo test), the fleet tests on real etcd, ZooKeeper and PostgreSQL included
source "$(dirname "$0")/../lib.sh"
# Last, so its closing line is the run's summary: the README's test command. The tool's
# default features include etcd, ZooKeeper and PostgreSQL, so this runs the fleet tests
# too: the claim store contract and the fleet scenarios on a real etcd (one member and a
# three-member cluster), a real ZooKeeper and a real PostgreSQL (a primary and its
# standby), started by the tests on 127.0.0.1, with real processes and a TCP proxy.
cargo test
disk
