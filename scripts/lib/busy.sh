#!/usr/bin/env bash
# Runs a command on a busy machine: BURNERS (default 2, one per core of a 2-core runner) CPU
# burners at normal priority beside it, stopped when it ends; its exit status.
#   scripts/lib/busy.sh nice -n 10 target/debug/deps/region_hint-HASH two_hundred --nocapture
set -uo pipefail
n=${BURNERS:-2}
pids=()
for ((i = 0; i < n; i++)); do
  timeout 3600 sh -c 'while :; do :; done' &
  pids+=($!)
done
trap 'kill "${pids[@]}" 2>/dev/null' EXIT
"$@"
