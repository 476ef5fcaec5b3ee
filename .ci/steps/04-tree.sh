#!/usr/bin/env bash
# the tree: no tracked build output, no tracked file over 4 MB
source "$(dirname "$0")/../lib.sh"
# A shared object, wheel, archive or object file is built, never committed (the Python
# tests build and install their own wheel); a large file is most likely one of them.
if git ls-files | grep -E '\.(so|dylib|dll|pyd|whl|o|a|rlib|rmeta|exe|tar\.gz|zip)$|(^|/)(target|dist|build|__pycache__)/'; then
    echo "the files above are build outputs: git rm --cached them (and ignore them in .gitignore)" >&2
    exit 1
fi
big=$( (git ls-files -z | xargs -0 -r stat -L -c '%s %n' 2>/dev/null || true) | awk '$1 > 4 * 1024 * 1024')
if [ -n "$big" ]; then
    printf '%s\n' "$big" >&2
    echo "the tracked files above are over 4 MB: keep data and build outputs out of git" >&2
    exit 1
fi
