#!/usr/bin/env bash
# stress.sh [COUNT] [PACKAGES...]: the concurrent packages' tests COUNT times
# (default 3) under the race detector, in shuffled order, while one CPU
# burner per core competes for the machine: a test that only passes on an
# idle box fails here. Prints a line per repetition and exits 1 on the first
# failing one, keeping its output.
set -uo pipefail
count=${1:-3}
shift || true
[ $# -gt 0 ] || set -- ./engine/... ./faults/... ./agents/... ./harness/...
cd "$(dirname "$0")/.."
go=${GO:-go}
burners=()
for _ in $(seq 1 "$(nproc)"); do
	(while :; do :; done) &
	burners+=($!)
done
trap 'kill "${burners[@]}" 2>/dev/null' EXIT
log=$(mktemp)
fails=0
for i in $(seq 1 "$count"); do
	start=$(date +%s)
	if $go test -race -count=1 -shuffle=on -timeout 15m "$@" >"$log" 2>&1; then
		echo "stress: repetition $i/$count passed in $(( $(date +%s) - start ))s ($(nproc) CPU burners)"
	else
		fails=$((fails + 1))
		echo "stress: repetition $i/$count FAILED in $(( $(date +%s) - start ))s; output kept in $log"
		grep -E '^(--- FAIL|FAIL|panic:)' "$log" | head -20
		exit 1
	fi
done
rm -f "$log"
echo "stress: $count repetitions, $fails failures"
