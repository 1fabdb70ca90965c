// Package process injects process faults on a target's role processes:
// SIGSTOP/SIGCONT (a frozen process whose sockets stay open) and SIGKILL
// with a restart (a crash). It reads /proc/<pid>/stat to prove the signal
// took effect, so it is Linux-only in practice.
//
// This package must not import harness/, suites/ or Ginkgo.
package process
