#!/usr/bin/env bash
# fuzz.sh: run every native fuzz target of the module in turn, each for
# FUZZTIME (default 1m), one at a time, and stop at the first crasher with
# the path of its input (go test has written it under the package's
# testdata/fuzz/FuzzX/, where `go test` replays it from then on).
#
#   scripts/fuzz.sh [FUZZTIME] [PACKAGES...]      e.g. scripts/fuzz.sh 10m ./zmtp/
#
# FUZZPARALLEL sets go test -parallel (default 1: one fuzzing worker, so
# each target's figures mean the same on any machine). A summary line per
# target (executions, new interesting inputs) is printed at the end.
set -euo pipefail
fuzztime=${1:-1m}
shift || true
[ $# -gt 0 ] || set -- ./...
go=${GO:-go}
parallel=${FUZZPARALLEL:-1}

# go test -list prints the matching names of a package, then "ok <pkg> …".
targets=()
pending=()
while IFS= read -r line; do
	case "$line" in
	Fuzz*) pending+=("$line") ;;
	ok*)
		pkg=$(awk '{print $2}' <<<"$line")
		for t in "${pending[@]}"; do targets+=("$pkg $t"); done
		pending=()
		;;
	esac
done < <($go test -list '^Fuzz' "$@")
if [ ${#targets[@]} -eq 0 ]; then
	echo "fuzz: no fuzz targets in $*" >&2
	exit 1
fi

summary=()
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for entry in "${targets[@]}"; do
	read -r pkg target <<<"$entry"
	echo "== $target ($pkg) for $fuzztime"
	if ! $go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" -parallel="$parallel" "$pkg" 2>&1 | tee "$log"; then
		dir=$($go list -f '{{.Dir}}' "$pkg")
		input=$(sed -n 's/.*Failing input written to \(testdata\/fuzz\/[^ ]*\).*/\1/p' "$log" | tail -1)
		if [ -n "$input" ]; then
			echo "fuzz: $target found a crasher: $dir/$input" >&2
			echo "fuzz: replay it with: go test -run='^$target/$(basename "$input")\$' $pkg" >&2
		else
			echo "fuzz: $target failed (see above)" >&2
		fi
		exit 1
	fi
	last=$(grep -o 'execs: [0-9]*.*new interesting: [0-9]*' "$log" | tail -1 | sed 's/ ([0-9]*\/sec)//' || true)
	summary+=("$target ($pkg): ${last:-no progress line}")
done
echo "== fuzz summary (each target $fuzztime)"
printf '%s\n' "${summary[@]}"
