package record

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/pdchaos/pdchaos/harness/check"
)

// EventLog appends events to events.jsonl and keeps them in memory for the
// checkers. Safe for concurrent use; the base is the run's time origin.
type EventLog struct {
	base time.Time
	mu   sync.Mutex
	w    *bufio.Writer
	f    *os.File
	evs  []check.Event
	err  error
}

// NewEventLog writes to path (empty: memory only) with time origin base.
func NewEventLog(path string, base time.Time) (*EventLog, error) {
	l := &EventLog{base: base}
	if path != "" {
		f, err := os.Create(path)
		if err != nil {
			return nil, fmt.Errorf("create event log: %w", err)
		}
		l.f, l.w = f, bufio.NewWriter(f)
	}
	return l, nil
}

// Since is the offset of now from the base on the monotonic clock.
func (l *EventLog) Since() time.Duration { return time.Since(l.base) }

// Add stamps ev (if T is 0) and appends it.
func (l *EventLog) Add(ev check.Event) {
	if ev.T == 0 {
		ev.T = time.Since(l.base)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, ev)
	if l.w != nil && l.err == nil {
		b, err := json.Marshal(ev)
		if err == nil {
			b = append(b, '\n')
			_, err = l.w.Write(b)
		}
		l.err = err
	}
}

// Events returns a copy of every event so far.
func (l *EventLog) Events() []check.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]check.Event(nil), l.evs...)
}

// Flush writes buffered lines to the file.
func (l *EventLog) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w == nil {
		return l.err
	}
	if err := l.w.Flush(); err != nil && l.err == nil {
		l.err = err
	}
	if l.err != nil {
		return fmt.Errorf("write event log: %w", l.err)
	}
	return nil
}

// Close flushes and closes the file.
func (l *EventLog) Close() error {
	err := l.Flush()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		if cerr := l.f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close event log: %w", cerr)
		}
		l.f, l.w = nil, nil
	}
	return err
}

// ReadEventsFile reads events.jsonl from path. Its errors name the file
// and, for a malformed line, the line.
func ReadEventsFile(path string) ([]check.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open events %s: %w", path, err)
	}
	defer f.Close()
	evs, err := check.ReadEvents(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return evs, nil
}
