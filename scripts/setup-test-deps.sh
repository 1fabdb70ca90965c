#!/bin/sh
# setup-test-deps.sh installs the non-Go tools our tests use: Debian's
# python3-zmq (libzmq), so zmtp and faults/protocol are tested against a
# ZMTP implementation that is not ours, and libxml2-utils (xmllint), so
# reports validates its JUnit files against a schema.
#
# Idempotent and quiet: does nothing when /usr/bin/python3 can already
# import zmq and xmllint is on the PATH. Needs root (or sudo without a
# password) to install; reads no stdin, so it runs unattended in CI.
set -eu

PY=/usr/bin/python3

have_zmq() {
	[ -x "$PY" ] && "$PY" -c 'import zmq' >/dev/null 2>&1
}

have_xmllint() {
	command -v xmllint >/dev/null 2>&1
}

if have_zmq && have_xmllint; then
	exit 0
fi

SUDO=""
if [ "$(id -u)" != "0" ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO="sudo -n"
	else
		echo "setup-test-deps: need root to install python3-zmq and libxml2-utils" >&2
		exit 1
	fi
fi

export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends python3 python3-zmq libxml2-utils; } </dev/null >"$log" 2>&1; then
	cat "$log" >&2
	echo "setup-test-deps: apt-get install python3-zmq libxml2-utils failed" >&2
	exit 1
fi

if ! have_zmq; then
	echo "setup-test-deps: python3-zmq installed but 'import zmq' still fails" >&2
	exit 1
fi
if ! have_xmllint; then
	echo "setup-test-deps: libxml2-utils installed but xmllint is not on the PATH" >&2
	exit 1
fi
