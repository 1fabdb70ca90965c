#!/usr/bin/env bash
# interrupt-runs.sh [N] [SEED]: N runs (default 100) across the preset
# scenarios, each interrupted at a seeded random moment with SIGINT, SIGTERM
# or SIGKILL, then a count of what each left behind:
#   - role processes (`pdchaos engine --run-label ...`) still alive,
#   - processes left stopped (state T),
#   - listening TCP sockets owned by any of those,
#   - harness hangs (a run that did not exit within 60 s of SIGINT/SIGTERM).
# Hooks and proxies live inside the harness or the role processes, so none
# can outlive them unnoticed: a live role process is counted above.
# Exits 1 when anything was left, with the runs that left it.
set -euo pipefail
n=${1:-100}
seed=${2:-1}
cd "$(dirname "$0")/.."
go=${GO:-go}
$go build -o bin/pdchaos ./cmd/pdchaos
bin=$(realpath bin/pdchaos)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mapfile -t presets < <(ls suites/scenarios/*.yaml | xargs -n1 basename | sed 's/\.yaml$//')
RANDOM=$seed
left_procs=0 left_stopped=0 left_listen=0 hangs=0 early=0
declare -A by_sig=()
bad=()
roles() { pgrep -f -- "^$bin engine .*--run-label" || true; }
for i in $(seq 1 "$n"); do
	preset=${presets[$((RANDOM % ${#presets[@]}))]}
	dur=$(sed -n 's/^duration: *\([0-9]*\)s.*/\1/p' "suites/scenarios/$preset.yaml")
	dur=${dur:-10}
	sigs=(INT TERM KILL)
	sig=${sigs[$((RANDOM % 3))]}
	# any moment from start-up to a little past the load: set-up, faults, drain
	at_ms=$((200 + RANDOM % ((dur + 4) * 1000)))
	"$bin" run "$preset" --seed "$i" --results "$work/runs" >"$work/run.log" 2>&1 &
	pid=$!
	sleep "$(printf '%d.%03d' $((at_ms / 1000)) $((at_ms % 1000)))"
	if kill -0 "$pid" 2>/dev/null; then
		kill -s "$sig" "$pid"
		by_sig[$sig]=$((${by_sig[$sig]:-0} + 1))
		outcome="$sig at $((at_ms / 1000)).$((at_ms % 1000 / 100))s"
	else
		early=$((early + 1))
		outcome="ended before $sig at $((at_ms / 1000))s"
	fi
	waited=0
	while kill -0 "$pid" 2>/dev/null && [ $waited -lt 600 ]; do
		sleep 0.1
		waited=$((waited + 1))
	done
	if kill -0 "$pid" 2>/dev/null; then
		hangs=$((hangs + 1))
		bad+=("run $i $preset: harness still running 60 s after $sig")
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || true
	# role processes get a parent-death signal: give them a moment to go
	for _ in $(seq 1 50); do
		[ -z "$(roles)" ] && break
		sleep 0.1
	done
	pids=$(roles)
	if [ -n "$pids" ]; then
		np=$(wc -w <<<"$pids")
		ns=$(for p in $pids; do ps -o stat= -p "$p" 2>/dev/null; done | grep -c '^T' || true)
		nl=$(for p in $pids; do ss -ltnpH 2>/dev/null | grep -c "pid=$p," || true; done | awk '{s+=$1} END {print s+0}')
		left_procs=$((left_procs + np))
		left_stopped=$((left_stopped + ns))
		left_listen=$((left_listen + nl))
		bad+=("run $i $preset ($outcome): $np role processes left ($ns stopped, $nl listening): $(tr '\n' ' ' <<<"$pids")")
		for p in $pids; do kill -CONT "$p" 2>/dev/null || true; kill -KILL "$p" 2>/dev/null || true; done
	fi
	printf '[%d/%d] %s seed %d: %s\n' "$i" "$n" "$preset" "$i" "$outcome"
	rm -rf "$work/runs"
done
echo "interrupt-runs: $n runs (seed $seed): INT ${by_sig[INT]:-0}, TERM ${by_sig[TERM]:-0}, KILL ${by_sig[KILL]:-0}, $early ended before their signal"
echo "interrupt-runs: leftover role processes $left_procs, stopped $left_stopped, listening sockets $left_listen, harness hangs $hangs"
if [ ${#bad[@]} -gt 0 ]; then
	printf '  %s\n' "${bad[@]}"
	exit 1
fi
