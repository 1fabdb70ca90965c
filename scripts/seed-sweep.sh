#!/usr/bin/env bash
# seed-sweep.sh SEEDS [RUN_FLAGS...]: every preset on the fixed engine and every
# regression in its catching scenario over seeds 1..SEEDS, JOBS runs at a time
# (default 2), with the same extra `pdchaos run` flags for each (for example
# --gauges logged, or --gauges logged --no-loads). Writes one TSV line per run to
# $RESULTS_DIR/seed-sweep/<label>/runs.tsv (preset, regression or "-", seed, exit
# code, checks that did not pass, seconds to the first room-age wedge and to the
# first gauge or queue wedge, the load average when it started) and prints a
# Markdown summary: per preset the passes, per regression the seeds its own
# checker caught and the median detection times. PART=presets|regressions|all
# (default all) narrows it, PRESETS="a b" to those presets; LABEL names the
# output folder (default: the flags).
set -euo pipefail
n=${1:?usage: seed-sweep.sh SEEDS [RUN_FLAGS...]}
shift
case $n in '' | *[!0-9]*) echo "seed-sweep: SEEDS must be a positive number, not '$n'" >&2; exit 2 ;; esac
bin=${PDCHAOS:-bin/pdchaos}
jobs=${JOBS:-2}
part=${PART:-all}
case $part in presets | regressions | all) ;; *) echo "seed-sweep: PART must be presets, regressions or all, not '$part'" >&2; exit 2 ;; esac
label=${LABEL:-$(echo "${*:-default}" | tr -c 'a-zA-Z0-9.\n-' '_' | sed 's/^_*//')}
out=${RESULTS_DIR:-runs}/seed-sweep/$label
mkdir -p "$out"
tsv=$out/runs.tsv
: >"$tsv"

# One line per run to do: preset, regression ("-" for none), the checker that must catch it ("-").
plan=$out/plan.txt
: >"$plan"
if [ "$part" != regressions ]; then
	for p in ${PRESETS:-$(ls suites/scenarios/*.yaml | xargs -n1 basename | sed 's/\.yaml$//')}; do
		for s in $(seq 1 "$n"); do echo "$p - - $s" >>"$plan"; done
	done
fi
if [ "$part" != presets ]; then
	"$bin" engine --regression list | sed -n 's/^ *caught by: pdchaos run \([^ ]*\) --regression \([^ ]*\) (\([^)]*\)).*/\1 \2 \3/p' |
		while read -r sc reg ck; do
			for s in $(seq 1 "$n"); do echo "$sc $reg $ck $s" >>"$plan"; done
		done
fi
if ! [ -s "$plan" ]; then
	echo "seed-sweep: nothing to run (is $bin built? try: make build)" >&2
	exit 3
fi

one() {
	local sc=$1 reg=$2 ck=$3 seed=$4
	# The extra run flags, split on spaces (none of pdchaos's values has one).
	# shellcheck disable=SC2086
	set -- $SWEEP_FLAGS
	local dir=$out/$sc@$reg/seed-$seed load code=0
	rm -rf "$dir"
	mkdir -p "$dir"
	load=$(cut -d' ' -f1 /proc/loadavg)
	local regflag=()
	[ "$reg" != - ] && regflag=(--regression "$reg")
	"$bin" run "$sc" "${regflag[@]}" --seed "$seed" --results "$dir" "$@" >"$dir.log" 2>&1 || code=$?
	python3 - "$dir" "$sc" "$reg" "$ck" "$seed" "$code" "$load" >>"$tsv" <<'EOF'
import glob, json, sys
d, sc, reg, ck, seed, code, load = sys.argv[1:]
notpass, room, gauge = [], "-", "-"
try:
    r = json.load(open(glob.glob(d + "/*/result.json")[0]))
    notpass = [c["name"] + ":" + c["status"] for c in r.get("checks", []) if c["status"] != "pass"]
    for line in open(glob.glob(d + "/*/events.jsonl")[0]):
        e = json.loads(line)
        if e.get("type") != "wedge":
            continue
        t = round(e["t"] / 1e9, 2)
        if e["wedge"].get("kind") == "room":
            room = t if room == "-" else room
        elif gauge == "-":
            gauge = t
except (IndexError, OSError, ValueError) as err:
    notpass = ["no-result:" + type(err).__name__]
print("\t".join([sc, reg, ck, seed, code, ",".join(notpass) or "-", str(room), str(gauge), load]), flush=True)
EOF
	echo "$sc ${reg/#-/fixed} seed $seed: exit $code" >&2
}
export -f one
export bin out tsv
export SWEEP_FLAGS="$*"
start=$SECONDS
# Each plan line becomes one `one` call; xargs keeps JOBS of them running.
xargs -P "$jobs" -L 1 bash -c 'one "$@"' _ <"$plan" 2>&1 || true
wall=$((SECONDS - start))

python3 - "$tsv" "$n" "$wall" "$*" <<'EOF'
import statistics, sys
tsv, n, wall, flags = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rows = [l.rstrip("\n").split("\t") for l in open(tsv) if l.strip()]
loads = [float(r[8]) for r in rows]
print(f"\n{len(rows)} runs in {wall} s, flags: {flags or '(none)'}, load {min(loads):.1f}-{max(loads):.1f}\n")
presets = {}
for r in rows:
    if r[1] == "-":
        presets.setdefault(r[0], []).append(r)
if presets:
    print("| preset | passed | not passing (seed: checks) |\n|---|---|---|")
    for p, rs in sorted(presets.items()):
        bad = [f"{r[3]}: {r[5]}" for r in sorted(rs, key=lambda r: int(r[3])) if r[4] != "0"]
        print(f"| `{p}` | {len(rs) - len(bad)}/{len(rs)} | {'; '.join(bad) or '-'} |")
    print()
regs = {}
for r in rows:
    if r[1] != "-":
        regs.setdefault((r[1], r[0], r[2]), []).append(r)
def med(xs):
    xs = [float(x) for x in xs if x != "-"]
    return f"{statistics.median(xs):.1f} s ({len(xs)} seeds)" if xs else "never"
if regs:
    print("| regression | scenario | checker | caught | failed otherwise | first room-age wedge | first gauge/queue wedge |\n|---|---|---|---|---|---|---|")
    for (reg, sc, ck), rs in sorted(regs.items()):
        caught = sum(1 for r in rs if r[4] == "1" and f"{ck}:fail" in r[5].split(","))
        other = sum(1 for r in rs if r[4] != "0") - caught
        print(f"| `{reg}` | `{sc}` | {ck} | {caught}/{len(rs)} | {other} | {med(r[6] for r in rs)} | {med(r[7] for r in rs)} |")
EOF
