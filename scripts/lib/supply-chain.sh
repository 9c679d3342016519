#!/usr/bin/env bash
# Supply-chain checks, offline: cargo-deny (pinned, built from crates.io into target/tools)
# over Cargo.lock and fuzz/Cargo.lock with deny.toml — advisories from the RustSec snapshot
# (a git bundle in the shared reference folder, cloned where cargo-deny looks for its
# database), every licence allowed by name, crates.io as the only source, duplicate versions
# reported. Refresh the snapshot with `scripts/lib/supply-chain.sh --fetch` where GitHub is
# reachable.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

deny_version=0.20.2
tools="$root/target/tools"
deny="$tools/bin/cargo-deny"
installed=$("$deny" --version 2>/dev/null || true)
if [ "$installed" != "cargo-deny $deny_version" ]; then
  cargo install --quiet cargo-deny --version "$deny_version" --locked --root "$tools"
fi

# cargo-deny keeps the database of https://github.com/rustsec/advisory-db in this folder.
db="$root/target/advisory-db/advisory-db-3157b0e258782691"
if [ "${1:-}" = "--fetch" ]; then
  rm -rf "$db"
  exec "$deny" fetch db
fi
bundle=${LOCALITY_ADVISORY_BUNDLE:-}
if [ -z "$bundle" ]; then
  for candidate in "$root"/../shared/reference/rustsec/*.bundle /work/shared/reference/rustsec/*.bundle; do
    if [ -f "$candidate" ]; then bundle=$candidate; break; fi
  done
fi
checks=(advisories bans licenses sources)
if [ -n "$bundle" ]; then
  if [ ! -d "$db/.git" ]; then
    rm -rf "$db"
    git -c init.defaultBranch=main clone --quiet "$bundle" "$db"
  fi
  echo "advisories: RustSec snapshot $(basename "$bundle") (last advisory commit $(git -C "$db" log -1 --format=%cs))" >&2
else
  echo "WARNING: advisories NOT checked: no RustSec snapshot (set LOCALITY_ADVISORY_BUNDLE, or see ../shared/reference/rustsec/)" >&2
  checks=(bans licenses sources)
fi

# Every crate of both lock files, for every platform (not only what this machine's build
# downloaded: cargo-deny reads the whole graph), must be in the local cache for an offline run.
cargo fetch --quiet --locked
cargo fetch --quiet --locked --manifest-path fuzz/Cargo.toml
"$deny" --offline check "${checks[@]}"
"$deny" --offline --manifest-path fuzz/Cargo.toml check "${checks[@]}"
