#!/usr/bin/env bash
# What 2 workers give against 1 (`--parallelism 2` ÷ `--parallelism 1`), beside what this
# machine gives two busy threads at the time: two `--parallelism 1` runs at once, their
# summed pods/s ÷ one run's alone ("ceiling"). On a shared VM the ceiling moves between
# about 1.2 and 1.8 from minute to minute, so a p2 ÷ p1 figure means something only beside
# the ceiling of the same round (perf/RESULTS.md, issue 18).
#
#   perf/two-core-ceiling.sh [BIN] [NODES] [PODS] [ROUNDS]
#   (defaults: target/release/ksched 50000 30000 6)
set -euo pipefail
bin=${1:-target/release/ksched}
nodes=${2:-50000}
pods=${3:-30000}
rounds=${4:-6}
pps() {
  "$bin" run --nodes "$nodes" --pods "$pods" --warmup-pods 1000 --parallelism "$1" --format json \
    | python3 -c 'import json, sys; print(round(json.load(sys.stdin)["pods_per_second"]))'
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "round  p1  p2  p2/p1  two-p1-at-once  ceiling"
for r in $(seq 1 "$rounds"); do
  p1=$(pps 1)
  p2=$(pps 2)
  pps 1 >"$tmp/a" &
  pps 1 >"$tmp/b"
  wait
  a=$(cat "$tmp/a")
  b=$(cat "$tmp/b")
  python3 -c "print($r, $p1, $p2, round($p2 / $p1, 2), '$a+$b', round(($a + $b) / $p1, 2))"
done
