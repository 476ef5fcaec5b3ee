#!/usr/bin/env bash
# CHANGELOG.md in the Keep a Changelog shape
source "$(dirname "$0")/../lib.sh"
# `## [Unreleased]` or `## [X.Y.Z] - YYYY-MM-DD`, then only the six kinds of change.
if grep -nE '^## ' CHANGELOG.md | grep -vE '^[0-9]+:## \[(Unreleased|[0-9]+\.[0-9]+\.[0-9]+)\]( - [0-9]{4}-[0-9]{2}-[0-9]{2})?$' \
    || grep -nE '^### ' CHANGELOG.md | grep -vE '^[0-9]+:### (Added|Changed|Deprecated|Removed|Fixed|Security)$' \
    || ! grep -q '^## \[Unreleased\]$' CHANGELOG.md; then
    echo "CHANGELOG.md: the headings above are not Keep a Changelog's (## [Unreleased] or ## [X.Y.Z] - DATE, then ### Added, Changed, Deprecated, Removed, Fixed or Security); the story of a change goes in docs/history.md" >&2
    exit 1
fi
