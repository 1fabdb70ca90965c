package faults

import "fmt"

// StopName is a process stop fault's name, sigstop(ROLE), and KillName a
// process kill's, sigkill(ROLE) or sigkill(ROLE,restart): the live faults
// and the simulator name their windows alike, and the checkers read the
// role back from the name.
func StopName(role string) string { return fmt.Sprintf("sigstop(%s)", role) }

// KillName is a process kill fault's name (see StopName).
func KillName(role string, restart bool) string {
	if restart {
		return fmt.Sprintf("sigkill(%s,restart)", role)
	}
	return fmt.Sprintf("sigkill(%s)", role)
}
