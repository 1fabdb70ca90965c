package sim

import "time"

// untilContinues calls f once, at the first of: role's process continuing
// after a stop, its dying, or deadline. A stopped process answers what
// waited on it the moment it continues, so a moment between two stops is
// enough for an answer, as it is live; f looks again at what it waited
// for (the process may be stopped again by the time it runs).
func (s *run) untilContinues(role string, deadline time.Duration, label string, f func()) {
	fired := false
	once := func() {
		if !fired {
			fired = true
			f()
		}
	}
	s.waiting[role] = append(s.waiting[role], func() { s.at(s.now, label, once) })
	s.at(deadline, label, once)
}

// continued wakes what waits on role's process: it continued or died.
func (s *run) continued(role string) {
	ws := s.waiting[role]
	s.waiting[role] = nil
	for _, w := range ws {
		w()
	}
}
