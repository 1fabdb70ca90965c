#!/usr/bin/env bash
# profiles.sh [SEED]: every preset once with seed SEED (default 1) on the
# fixed engine and under each upstream profile (pdchaos engine --profile
# list), the way a user runs them: `pdchaos run PRESET --profile P --seed 1`.
# Prints one line per run and a Markdown table at the end: each cell is the
# verdict and the checkers that failed (docs/sglang.md §8 holds the last
# measured table). PRESETS="a b" limits the presets.
set -euo pipefail
seed=${1:-1}
bin=${PDCHAOS:-bin/pdchaos}
results=${RESULTS_DIR:-runs}/profiles
mkdir -p "$results"
profiles=$("$bin" engine --profile list | sed -n 's/^\([a-z][a-z0-9-]*\) .*/\1/p')
presets=${PRESETS:-$(ls suites/scenarios/*.yaml | xargs -n1 basename | sed 's/\.yaml$//')}
header="| preset | fixed engine |"
sep="|---|---|"
for p in $profiles; do header="$header \`$p\` |"; sep="$sep---|"; done
rows=()
for sc in $presets; do
	row="| \`$sc\` |"
	for p in fixed $profiles; do
		dir="$results/$p/$sc"
		rm -rf "$dir"
		mkdir -p "$dir"
		flag=()
		[ "$p" != fixed ] && flag=(--profile "$p")
		code=0
		"$bin" run "$sc" "${flag[@]}" --seed "$seed" --results "$dir" >"$dir.log" 2>&1 || code=$?
		failed=$(python3 -c 'import json,sys,glob
r=json.load(open(glob.glob(sys.argv[1]+"/*/result.json")[0]))
print(", ".join(c["name"] for c in r.get("checks",[]) if c["status"]=="fail"))' "$dir" 2>/dev/null || echo "no result")
		case $code in 0) v=pass ;; 1) v=FAIL ;; 2) v=inconclusive ;; *) v="error $code" ;; esac
		[ -n "$failed" ] && v="$v: $failed"
		echo "$sc $p seed $seed: exit $code $v"
		row="$row $v |"
	done
	rows+=("$row")
done
echo
echo "$header"
echo "$sep"
printf '%s\n' "${rows[@]}"
