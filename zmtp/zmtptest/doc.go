// Package zmtptest runs libzmq peers (Debian's python3-zmq, through
// /usr/bin/python3) for interop tests of zmtp and faults/protocol, so
// both are checked against a ZMTP implementation that is not ours.
//
// When python3-zmq is missing the helpers skip the test with a message,
// except when PDCHAOS_REQUIRE_PYZMQ=1: then they fail. `make test` runs
// scripts/setup-test-deps.sh first, which installs it where a Debian mirror
// is reachable.
//
// It is for tests only and must not be imported by non-test code; it
// imports nothing from pdchaos.
package zmtptest
