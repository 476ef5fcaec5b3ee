#!/usr/bin/env bash
# a new user's project: the lean core and flakeid-stores' defaults build without protoc, with no warning (scripts/downstream.sh)
source "$(dirname "$0")/../lib.sh"
scripts/downstream.sh
rm -rf target/downstream
