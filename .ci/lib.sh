# The setting every step of .ci/run shares; each step script (.ci/steps/NN-name.sh) sources
# it, so a step runs alone too: `bash .ci/steps/21-loom.sh`. A step that needs a server or
# a tool assumes the steps that install them (02-servers, 03-runtimes) ran once on the
# machine.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CARGO_TERM_COLOR=never
# Disk: the run builds about ten target trees (debug, release, loom, no-simd, hack, miri,
# fuzz). Without incremental caches and with line tables only, they stay small enough for a
# machine with a few GiB free; the side trees are removed once their step is done.
export CARGO_INCREMENTAL=0
export CARGO_PROFILE_DEV_DEBUG=line-tables-only
export CARGO_PROFILE_TEST_DEBUG=line-tables-only
# A test that needs a server and finds none fails here instead of skipping.
export FLAKEID_REQUIRE_SERVERS=1
disk() { printf 'disk: %s MiB used by target trees, %s free\n' \
    "$(du -sm target fuzz/target 2>/dev/null | awk '{n += $1} END {print n + 0}')" \
    "$(df -h --output=avail . | tail -1 | tr -d ' ')"; }
