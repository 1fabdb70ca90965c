#!/usr/bin/env bash
# sim-coverage.sh [SEEDS]: code probe coverage of the simulator over
# everything the gate explores there. Every preset runs seeds 1..SEEDS
# (default 30) in its own dialect and in Mooncake's, plain and with swarm
# draws; every regression runs in each preset that catches it (the
# catalogue's caught-by and also-caught-by), plain and swarm; and the two
# regression branches the gate reaches in other presets (regressionBranches
# in suites/gate/sim_test.go) run as the gate runs them. Prints, per probe,
# the seeds that hit it summed over the sweeps and how many sweeps did, the
# least hit first, and fails when a probe in engine/core (the code the
# simulator runs) is hit by none, or when a sweep of the fixed engine has a
# failing seed. I/O-layer probes are listed and counted apart: the gate's
# live runs reach them.
set -euo pipefail
n=${1:-30}
bin=${PDCHAOS:-bin/pdchaos}
out=${RESULTS_DIR:-runs}/sim-coverage
rm -rf "$out"
mkdir -p "$out"
sweep() { # name, then pdchaos sim arguments
	local name=$1
	shift
	"$bin" sim "$@" --probes >"$out/$name.txt" 2>&1 || true
}
for f in suites/scenarios/*.yaml; do
	p=$(basename "$f" .yaml)
	sweep "fixed@$p" "$p" --seeds "1..$n"
	sweep "fixed@$p+swarm" "$p" --seeds "1..$n" --swarm
	sweep "fixed@$p+mooncake" "$p" --seeds "1..$n" --wire mooncake
	sweep "fixed@$p+mooncake+swarm" "$p" --seeds "1..$n" --wire mooncake --swarm
done
while read -r scenario reg; do
	sweep "$reg@$scenario" "$scenario" --seeds "1..$n" --regression "$reg"
	sweep "$reg@$scenario+swarm" "$scenario" --seeds "1..$n" --regression "$reg" --swarm
done < <("$bin" engine --regression list | sed -n 's/.*caught by: pdchaos run \([^ ]*\) --regression \([^ ]*\) .*/\1 \2/p' | sort -u)
sweep "unknown-room-waiting@room-retries+swarm" room-retries --seeds 1..300 --regression unknown-room-waiting --swarm
sweep "bootstrap-thread-death@corrupt-control-messages+quiet" corrupt-control-messages --seeds 1..20 --regression bootstrap-thread-death --quiet-clients

# The listing marks a probe whose every site is outside engine/core "(I/O layer ...)".
awk '
FNR == 1 { sweep = FILENAME; sub(/.*\//, "", sweep); sub(/\.txt$/, "", sweep); sweeps++ }
/^[^ ].*: [0-9]+ seeds, [0-9]+ failing/ && sweep ~ /^fixed@/ {
	split($0, a, ", "); split(a[2], b, " "); if (b[1] + 0 > 0) { bad++; print "FAILING fixed-engine sweep " sweep ": " $0 } }
/^ +(- )?[a-z]+\/[a-z0-9-]+ +[0-9]+ seeds/ {
	line = $0; sub(/^ +(- )?/, "", line); split(line, f, " +")
	name = f[1]; seen[name] = 1; if (line ~ /I\/O layer/) io[name] = 1
	if (f[2] + 0 > 0) { hits[name] += f[2]; in_sweeps[name]++ } }
END {
	for (p in seen) { if (!(p in hits)) hits[p] = 0; printf "%8d %4d %s%s\n", hits[p], in_sweeps[p] + 0, p, (p in io) ? "  (I/O layer)" : "" | "sort -n" }
	close("sort -n")
	for (p in seen) { total++; if (hits[p] == 0) { if (p in io) ioMissed++; else { coreMissed++; missing = missing " " p } } else if (!(p in io)) coreHit++ ; if (p in io) ioAll++ }
	printf "\n%d sweeps; %d probes to reach: engine/core %d of %d hit, I/O layer %d of %d\n", sweeps, total, coreHit, total - ioAll, ioAll - ioMissed, ioAll
	if (coreMissed > 0) { print "engine/core probes no sweep hit:" missing; exit 1 }
	if (bad > 0) exit 1
}' "$out"/*.txt
