#!/usr/bin/env bash
# The comparison BENCHMARKS.md opens with, in one run on this machine: minting one ID, a
# batch of 4,096 and two threads on one generator, flakeid beside ferroid, snowflake_me,
# snowflaked, sonyflake, uuid v7 and ulid; decoding 4,096 IDs into columns beside the
# per-ID loop every peer offers; each beside its physical limit (one atomic read-modify-
# write, an affine fill of the buffer, a copy of the bytes) and the layout's cap. Prints
# the Markdown table; `--write` puts it at the top of BENCHMARKS.md (between the
# `headline` markers). About 4 minutes.
# Usage: scripts/headline.sh [--write]
set -euo pipefail
cd "$(dirname "$0")/.."
fast=(--warm-up-time 1 --measurement-time 2 --quiet)
cargo bench -q --bench mint -- '^(hot_path|batch_4096|contention/2)/' "${fast[@]}" >/dev/null
cargo bench -q --bench decode -- '^decode/4Ki/(per_id_decompose|batch|copy_reference)' "${fast[@]}" >/dev/null
python3 scripts/headline.py "$@"
