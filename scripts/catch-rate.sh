#!/usr/bin/env bash
# catch-rate.sh REGRESSION [SEEDS] — run the regression's catching scenario
# with the regression switched on over SEEDS seeds (default 20) and print
# how many runs failed (caught). The gate wants at least 19 of 20 for a probabilistic catch.
set -euo pipefail
reg=${1:?usage: catch-rate.sh REGRESSION [SEEDS]}
n=${2:-20}
bin=${PDCHAOS:-bin/pdchaos}
# The catching scenario comes from the regression catalogue (contract.Catalogue()).
scenario=$("$bin" engine --regression list | awk -v r="$reg" '$1 == r { f = 1 } f && $1 == "caught" { print $5; exit }')
if [ -z "$scenario" ]; then
  echo "catch-rate: unknown regression '$reg' (see: $bin engine --regression list)" >&2; exit 3
fi
results=${RESULTS_DIR:-runs}/catch-rate-$reg
mkdir -p "$results"
caught=0
for seed in $(seq 1 "$n"); do
  code=0
  "$bin" run "$scenario" --regression "$reg" --seed "$seed" --results "$results" >"$results/seed-$seed.log" 2>&1 || code=$?
  case $code in
    1) caught=$((caught + 1)); echo "seed $seed: caught" ;;
    0) echo "seed $seed: MISSED (run passed)" ;;
    *) echo "seed $seed: exit $code (see $results/seed-$seed.log)" ;;
  esac
done
echo "$reg caught by $scenario in $caught of $n seeds"
