#!/usr/bin/env bash
# report-screenshots.sh RUN_DIR [OUT_DIR] — open a run's report.html in headless
# Chromium (Debian's package, installed here if missing) and save PNG screenshots:
# the top of the page and the whole page. The page is opened from the file system
# and Chromium's background networking is off, so a page that needed the network
# would show it (broken charts), besides what reports' TestReportLoadsNothing checks.
set -euo pipefail
run=${1:?usage: report-screenshots.sh RUN_DIR [OUT_DIR]}
out=${2:-$run/screenshots}
page="$(cd "$run" && pwd)/report.html"
[ -f "$page" ] || { echo "report-screenshots: no $page (render it with: pdchaos report $run)" >&2; exit 3; }
if ! command -v chromium >/dev/null 2>&1; then
	SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo -n"
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get update -qq </dev/null >/dev/null && $SUDO apt-get install -y -qq --no-install-recommends chromium </dev/null >/dev/null \
		|| { echo "report-screenshots: could not install Debian's chromium" >&2; exit 3; }
fi
mkdir -p "$out"
profile=$(mktemp -d); trap 'rm -rf "$profile"' EXIT
shot() { # shot NAME WIDTHxHEIGHT
	chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
		--disable-component-update --disable-sync --user-data-dir="$profile" --hide-scrollbars \
		--window-size="${2/x/,}" --screenshot="$out/$1.png" "file://$page" >/dev/null 2>&1
	echo "$out/$1.png"
}
shot top 1280x1050
shot full 1280x9000
