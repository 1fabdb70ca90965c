// Package zmtptest runs libzmq peers (Debian's python3-zmq, through
// /usr/bin/python3) for interop tests of engine/zmtp and faults/protocol, so
// both are checked against a ZMTP implementation that is not ours.
//
// When python3-zmq is missing the helpers skip the test, except when the
// CI environment variable is "true": then they fail, so CI really runs the
// interop tests (scripts/setup-test-deps.sh installs the dependency).
//
// It is for tests only and must not be imported by non-test code; it
// imports nothing from pdchaos.
package zmtptest
