#!/usr/bin/env bash
# The public API as a sorted list of paths (one item a line, `kind path`), read from the
# rustdoc all-items page; every public item is a promise, so the list is kept in
# `api/public-api.txt` and CI fails when it is stale.
#   bash scripts/public-api.sh            print the list (builds the docs first)
#   bash scripts/public-api.sh --check    compare with api/public-api.txt; non-zero if stale
#   bash scripts/public-api.sh --write    rewrite api/public-api.txt
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}
cargo doc --no-deps --quiet >/dev/null
page="$target/doc/typestate_tensor/all.html"
list() {
  python3 - "$page" <<'PY'
import re, sys
html = open(sys.argv[1], encoding="utf-8").read()
# Each section of the all-items page: <h3 id="structs">Structs</h3><ul class="all-items"><li><a href="...">path</a></li>...
items = []
for kind, body in re.findall(r'<h3 id="([a-z-]+)">[^<]*</h3><ul class="all-items">(.*?)</ul>', html, re.S):
    for path in re.findall(r'<a href="[^"]*">([^<]*)</a>', body):
        items.append(f"{kind} {path}")
for line in sorted(items):
    print(line)
PY
}
case "${1:-}" in
  --write) list > api/public-api.txt; echo "api/public-api.txt: $(wc -l < api/public-api.txt) items" ;;
  --check)
    if ! diff -u api/public-api.txt <(list); then
      echo "public API changed: review the diff above, then run 'bash scripts/public-api.sh --write'" >&2
      exit 1
    fi
    echo "public API: $(wc -l < api/public-api.txt) items, as recorded" ;;
  *) list ;;
esac
