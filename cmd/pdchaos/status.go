package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// statusLine is the live one-line status: redrawn in place on a terminal,
// plain lines every few seconds when not a TTY or when CI=true.
type statusLine struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	shown bool
	last  time.Time
}

func newStatusLine(w io.Writer) *statusLine {
	tty := false
	if f, ok := w.(*os.File); ok && os.Getenv("CI") != "true" {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &statusLine{w: w, tty: tty}
}

// set replaces the status.
func (s *statusLine) set(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tty {
		fmt.Fprintf(s.w, "\r\033[K%s", msg)
		s.shown = true
		return
	}
	if time.Since(s.last) >= 5*time.Second {
		s.last = time.Now()
		fmt.Fprintln(s.w, msg)
	}
}

// line prints a message above the status.
func (s *statusLine) line(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tty && s.shown {
		fmt.Fprint(s.w, "\r\033[K")
		s.shown = false
	}
	fmt.Fprintln(s.w, msg)
}

// done ends the status line so later output starts on a fresh line.
func (s *statusLine) done() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tty && s.shown {
		fmt.Fprintln(s.w)
		s.shown = false
	}
}
