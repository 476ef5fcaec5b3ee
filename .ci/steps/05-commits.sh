#!/usr/bin/env bash
# commits: subjects of at most 72 characters, a blank line, then a body
source "$(dirname "$0")/../lib.sh"
# From the first commit after 23fdcd4 (the last with the old, long subjects). A clone
# without that history (a shallow one) checks what it has.
base=23fdcd4
range="$base..HEAD"
git cat-file -e "$base^{commit}" 2>/dev/null || range=HEAD
bad=0
for c in $(git rev-list --no-merges "$range"); do
    subject=$(git log -1 --format=%s "$c")
    second=$(git log -1 --format=%B "$c" | sed -n 2p)
    body=$(git log -1 --format=%b "$c" | grep -c . || true)
    if [ "${#subject}" -gt 72 ] || [ -n "$second" ] || [ "$body" -eq 0 ]; then
        printf '%s: %s chars, %s body lines: %s\n' "$(git rev-parse --short "$c")" "${#subject}" "$body" "$subject" >&2
        bad=1
    fi
done
if [ "$bad" -ne 0 ]; then
    echo "the commits above need a subject of at most 72 characters, a blank line and a body: git rebase -i and reword them" >&2
    exit 1
fi
