#!/usr/bin/env bash
# Runs a libFuzzer binary for a bounded time on a scratch copy of the seed corpus (libFuzzer adds
# the inputs it finds to its corpus folder; the sources stay untouched).
#   usage: run_fuzz.sh FUZZER SEED_DIR DICT SECONDS WORK_DIR
set -euo pipefail
fuzzer=$1 seeds=$2 dict=$3 seconds=$4 work=$5
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
cp "$seeds"/* "$work/corpus/"
"$fuzzer" "$work/corpus" -dict="$dict" -max_total_time="$seconds" -timeout=10 \
  -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 -artifact_prefix="$work/artifacts/"
