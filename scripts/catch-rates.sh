#!/usr/bin/env bash
# catch-rates.sh [SEEDS]: every catch of the regression catalogue — each
# regression's own (caught by) and the extra ones of shared/GATE.md's matrix
# (also caught by) — over seeds 1..SEEDS (default 5). A seed counts as caught
# only when the run failed with that catch's checker. Prints one line per
# catch and a Markdown table at the end. CATCHES=own limits it to each
# regression's own catch (the gate's 19-of-20 target); the default is all.
set -euo pipefail
n=${1:-5}
bin=${PDCHAOS:-bin/pdchaos}
results=${RESULTS_DIR:-runs}/catch-rates
mkdir -p "$results"
rows=()
case ${CATCHES:-all} in
own) prefix='^ *' ;; # "caught by:" alone, not "also caught by:"
all) prefix='.*' ;;
*) echo "catch-rates: CATCHES must be own or all, not ${CATCHES}" >&2; exit 2 ;;
esac
while read -r scenario reg checker; do
	caught=0 other=0
	for seed in $(seq 1 "$n"); do
		dir="$results/$reg@$scenario/seed-$seed"
		rm -rf "$dir"
		mkdir -p "$dir"
		code=0
		"$bin" run "$scenario" --regression "$reg" --seed "$seed" --results "$dir" >"$dir.log" 2>&1 || code=$?
		status=$(python3 -c 'import json,sys,glob
r=json.load(open(glob.glob(sys.argv[1]+"/*/result.json")[0]))
print(next((c["status"] for c in r.get("checks",[]) if c["name"]==sys.argv[2]), "absent"))' "$dir" "$checker" 2>/dev/null || echo "no-result")
		if [ "$code" = 1 ] && [ "$status" = fail ]; then
			caught=$((caught + 1))
		elif [ "$code" = 1 ]; then
			other=$((other + 1))
		fi
		echo "$reg by $scenario ($checker) seed $seed: exit $code, $checker $status"
	done
	rows+=("| \`$reg\` | \`$scenario\` | $checker | $caught/$n | $other |")
done < <("$bin" engine --regression list | sed -n "s/${prefix}caught by: pdchaos run \([^ ]*\) --regression \([^ ]*\) (\([^)]*\)).*/\1 \2 \3/p")
echo
echo "| regression | scenario | checker | caught | failed otherwise |"
echo "|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
