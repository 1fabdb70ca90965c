// Package zmtp is a small ZMTP 3.x codec (NULL mechanism) with PUSH and PULL
// sockets, written for pdchaos instead of using a full ZeroMQ binding.
//
// Why our own: the protocol-fault frame proxy (faults/protocol) needs
// frame-level parsing of the decode→prefill control link anyway, and the
// engine wants sockets whose blocking calls take a context, whose goroutines
// all stop on Close (goleak-clean), and whose buffering is bounded so that a
// slow reader pushes back on the sender through TCP rather than growing
// memory.
//
// What it speaks: ZMTP 3.0 and 3.1 greetings (it announces 3.1 and accepts
// any 3.x peer), the NULL security mechanism, the READY command with the
// Socket-Type and Identity properties, short and long frames, the MORE flag,
// and commands versus messages. A PING is answered with a PONG (ZMTP 3.1);
// other unknown commands are ignored. It interoperates with libzmq (tested
// against Debian's python3-zmq in both directions).
//
// The frame-level pieces (Greeting, ReadGreeting, Frame, ReadFrame,
// WriteFrame, ParseCommand, ParseProperties) are exported so a proxy can
// parse a connection without owning a socket. Re-encoding a parsed Frame
// reproduces its original bytes exactly (the LONG flag is kept), so a proxy
// with no rule active is byte-for-byte transparent.
//
// What it must not import: anything else from pdchaos (it sits at the
// bottom of the dependency graph), Ginkgo, or a ZeroMQ binding.
package zmtp
