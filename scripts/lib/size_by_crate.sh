#!/usr/bin/env bash
# Where the shipped provider binary's size goes, by crate: cargo-bloat (pinned, built from
# crates.io into target/tools) on the `distribution` profile, built unstripped into
# target/bloat (same code: only the symbols, which cargo-bloat needs, are kept). Prints the
# stripped size next to the table. About 10 minutes on 2 cores; not part of scripts/test.
# Usage: scripts/lib/size_by_crate.sh [ROWS]   (default 40)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

bloat_version=0.12.1
tools="$root/target/tools"
if [ ! -x "$tools/bin/cargo-bloat" ] || ! grep -q "cargo-bloat $bloat_version " "$tools/.crates.toml" 2>/dev/null; then
  cargo install --quiet cargo-bloat --version "$bloat_version" --locked --root "$tools"
fi
export PATH="$tools/bin:$PATH" CARGO_TARGET_DIR="$root/target/bloat" CARGO_PROFILE_DISTRIBUTION_STRIP=false
cargo bloat --locked --profile distribution --bin terraform-provider-locality --crates -n "${1:-40}"
unstripped="$CARGO_TARGET_DIR/distribution/terraform-provider-locality"
stripped=$(mktemp)
trap 'rm -f "$stripped"' EXIT
strip -o "$stripped" "$unstripped"
echo "unstripped $(stat -c %s "$unstripped") bytes; stripped with strip(1) $(stat -c %s "$stripped") bytes (scripts/bench prints the size of the binary scripts/release ships)"
