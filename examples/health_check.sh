#!/bin/sh
# A node health check for `telastic run --health-check` / `telastic agent --health-check`:
#
#   telastic run --health-check examples/health_check.sh --checkpoint-dir /shared/ckpt train.py
#
# It runs before the node is given a rank, every round. Exit 0: the node may take part. Anything
# else keeps it out of the round, and the last line on stderr is the reason telastic shows
# (`telastic status`, the Web UI, the ledger). It checks what a GPU node needs and passes on a
# CPU machine:
#   - the GPUs answer `nvidia-smi` (only where nvidia-smi is installed),
#   - free disk under the checkpoint directory (TELASTIC_CHECKPOINT_DIR, else the working dir),
#   - free memory (MemAvailable in /proc/meminfo, where there is one).
# Thresholds: HEALTH_MIN_DISK_MB (default 1024), HEALTH_MIN_MEM_MB (default 1024).
set -u

fail() {
  echo "$*" >&2
  exit 1
}

min_disk_mb=${HEALTH_MIN_DISK_MB:-1024}
min_mem_mb=${HEALTH_MIN_MEM_MB:-1024}

if command -v nvidia-smi >/dev/null 2>&1; then
  if ! out=$(nvidia-smi --query-gpu=index,name --format=csv,noheader 2>&1); then
    fail "nvidia-smi failed: $(printf '%s\n' "$out" | tail -n 1)"
  fi
  [ -n "$out" ] || fail "nvidia-smi lists no GPU"
fi

dir=${TELASTIC_CHECKPOINT_DIR:-.}
# The directory may not exist yet before the first checkpoint: check where it will be created.
while [ ! -d "$dir" ] && [ "$dir" != "/" ] && [ "$dir" != "." ]; do dir=$(dirname "$dir"); done
free_kb=$(df -Pk "$dir" 2>/dev/null | awk 'NR == 2 { print $4 }')
[ -n "$free_kb" ] || fail "cannot read free disk space under $dir"
free_mb=$((free_kb / 1024))
[ "$free_mb" -ge "$min_disk_mb" ] || fail "disk full: ${free_mb} MB free under $dir (need ${min_disk_mb} MB)"
[ -w "$dir" ] || fail "checkpoint directory $dir is not writable"

if [ -r /proc/meminfo ]; then
  avail_kb=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
  if [ -n "$avail_kb" ]; then
    avail_mb=$((avail_kb / 1024))
    [ "$avail_mb" -ge "$min_mem_mb" ] || fail "low memory: ${avail_mb} MB available (need ${min_mem_mb} MB)"
  fi
fi
exit 0
