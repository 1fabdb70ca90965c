#!/usr/bin/env bash
# sim-sweep.sh [TOTAL]: the fixed engine over TOTAL simulated seeds (default
# 100000) across every preset, half of each preset's share in its own dialect
# and half with swarm draws (`pdchaos sim PRESET --seeds 1..N [--swarm]`, all
# cores). Writes each sweep's output to $RESULTS_DIR/sim-sweep/<preset>[+swarm].txt
# and prints a Markdown table (seeds, failing, wall, simulated requests) with a
# total row, then every failing seed with its replay command. Exits 1 when any
# seed fails, 2 on bad input. A long sweep: about 75 minutes on 2 cores.
set -euo pipefail
total=${1:-100000}
case $total in '' | *[!0-9]*) echo "sim-sweep: TOTAL must be a positive number of seeds, not '$total'" >&2; exit 2 ;; esac
bin=${PDCHAOS:-bin/pdchaos}
out=${RESULTS_DIR:-runs}/sim-sweep
presets=$(ls suites/scenarios/*.yaml | xargs -n1 basename | sed 's/\.yaml$//')
n=$(echo "$presets" | wc -l)
sweeps=$((2 * n))
if [ "$total" -lt "$sweeps" ]; then
	echo "sim-sweep: TOTAL $total is less than one seed per sweep ($n presets, plain and swarm: $sweeps)" >&2
	exit 2
fi
rm -rf "$out"
mkdir -p "$out"
# Seeds per sweep: the first (total mod sweeps) sweeps take one more.
base=$((total / sweeps))
extra=$((total % sweeps))
i=0
start=$(date +%s)
for p in $presets; do
	for mode in plain swarm; do
		k=$base
		[ "$i" -lt "$extra" ] && k=$((k + 1))
		i=$((i + 1))
		name=$p
		flags=()
		if [ "$mode" = swarm ]; then
			name=$p+swarm
			flags=(--swarm)
		fi
		"$bin" sim "$p" --seeds "1..$k" "${flags[@]}" >"$out/$name.txt" 2>&1 || true
		# Progress on stderr: a long sweep says where it is.
		echo "sim-sweep: [$i/$sweeps] $(grep -E "^[^ ].*: [0-9]+ seeds, [0-9]+ failing" "$out/$name.txt" || echo "$name: no summary (see $out/$name.txt)")" >&2
	done
done
wall=$(($(date +%s) - start))

echo "| sweep | seeds | failing | wall | simulated requests |"
echo "|---|---|---|---|---|"
awk -v wall="$wall" '
FNR == 1 { name = FILENAME; sub(/.*\//, "", name); sub(/\.txt$/, "", name); got[name] = 0; order[++files] = name }
/^[^ ].*: [0-9]+ seeds, [0-9]+ failing, / {
	line = $0; sub(/^[^:]*: /, "", line)
	split(line, a, ", "); seeds = a[1] + 0; failing = a[2] + 0; w = a[3]; sub(/ wall.*/, "", w)
	req = line; sub(/.*\(/, "", req); split(req, r, ", "); requests = r[2] + 0
	got[name] = 1; printf "| %s | %d | %d | %s | %d |\n", name, seeds, failing, w, requests
	S += seeds; F += failing; R += requests }
END {
	for (j = 1; j <= files; j++) if (!got[order[j]]) { printf "| %s | no summary | | | |\n", order[j]; missing++ }
	printf "| **all** | %d | %d | %d s | %d |\n\n", S, F, wall, R
	if (wall > 0) printf "%.1f seeds/s, %.0f simulated requests/s\n", S / wall, R / wall
	if (F > 0 || missing > 0) exit 1
}' "$out"/*.txt || {
	rc=$?
	echo
	echo "failing seeds:"
	grep -h -E "^seed [0-9]+: FAIL|^replay:|^[^ ].*: [0-9]+ seeds, [1-9][0-9]* failing" "$out"/*.txt || true
	exit "$rc"
}
