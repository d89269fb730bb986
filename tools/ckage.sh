#!/bin/bash
# Issue 35: a rewind to a checkpoint 100 snapshots old, after GC, within 2x
# of a rewind to the newest. Both rewinds here change the same 10 files (each
# of the 100 checkpoints follows an edit of those 10 files in a 2,000-file
# tree), so they differ by the age of what they read alone: trees and file
# versions 100 snapshots back, repacked by GC into cold blocks, against the
# newest. Prints the median wall and CPU time (user + system) of each, as
# whole processes: `rewind --dry-run` before and after `trove gc`, then
# `rewind` (each followed by an untimed `rewind --undo`).
set -euo pipefail
# Usage: CGO_ENABLED=0 go build -o /tmp/trove ./cmd/trove && bash tools/ckage.sh /tmp/trove [runs]
T=${1:?trove binary}; RUNS=${2:-7}
W=$(mktemp -d /tmp/ckage.XXXX); S=$W/store; WS=$W/ws
trap 'rm -rf "$W"' EXIT
python3 - "$WS" <<'PY'
import os, random, sys
random.seed(1)
words = "func var return if else for range package import struct type interface map chan go defer select".split()
for i in range(2000):
    d = f"{sys.argv[1]}/pkg{i % 20:02d}/sub{(i // 20) % 8}"
    os.makedirs(d, exist_ok=True)
    out, n = [], 0
    while n < 20000:
        line = " ".join(random.choice(words) for _ in range(6)) + f" // {random.randint(0, 99999)}\n"
        out.append(line)
        n += len(line)
    p = f"{d}/f{i:04d}.go"
    with open(p, "w") as f:
        f.write("".join(out))
    os.utime(p, (1.7e9, 1.7e9))  # an old checkout: not racy
PY
files=$(cd "$WS" && ls pkg0*/sub0/*.go | head -10)
edit() { for f in $files; do echo "// $1" >> "$WS/$f"; done; }
for i in $(seq 0 99); do edit "edit $i"; "$T" --store "$S" checkpoint --dir "$WS" create "cp$i" >/dev/null; done
edit final
# cpu CMD...: prints "wall_ms cpu_ms" of one run of CMD.
cpu() {
  local out; TIMEFORMAT='%R %U %S'
  out=$( { time "$@" >/dev/null; } 2>&1 | tail -1)
  echo "$out" | awk '{printf "%.1f %.1f\n", $1*1000, ($2+$3)*1000}'
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
report() { # label, then lines of "wall cpu"
  local label=$1 data; data=$(cat)
  printf '%-34s wall %7s ms  cpu %7s ms\n' "$label" "$(echo "$data" | awk '{print $1}' | median)" "$(echo "$data" | awk '{print $2}' | median)"
}
dry() {
  for cp in cp0 cp99; do
    for _ in $(seq "$RUNS"); do cpu "$T" --store "$S" checkpoint --dir "$WS" rewind --dry-run "$cp"; done | report "$1 rewind --dry-run $cp"
  done
}
dry "before gc:"
"$T" --store "$S" gc >/dev/null
dry "after gc: "
for cp in cp0 cp99; do
  for _ in $(seq "$RUNS"); do
    cpu "$T" --store "$S" checkpoint --dir "$WS" rewind "$cp"
    "$T" --store "$S" checkpoint --dir "$WS" rewind --undo >/dev/null
  done | report "after gc:  rewind $cp"
done
