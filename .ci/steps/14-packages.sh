#!/usr/bin/env bash
# packages: the release's dry runs (scripts/release_dry_run.sh, docs/development.md, Releasing)
source "$(dirname "$0")/../lib.sh"
scripts/release_dry_run.sh
