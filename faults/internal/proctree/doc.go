// Package proctree reads process trees from /proc: a process's state and
// parent, its children and every descendant. Process faults freeze and
// kill whole trees with it (SGLang's server forks scheduler and detokenizer
// subprocesses that a signal to one PID never reaches), and faults.Reset
// continues whole trees with it.
//
// proctree imports the standard library only.
package proctree
