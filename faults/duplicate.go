package faults

import (
	"fmt"
	"strings"
)

// DuplicateName is a duplicate-messages fault's name, duplicate(LINK,KINDS)
// (KINDS joined with "+", "all" when empty): the frame proxy's fault and
// the simulator's model of it name their windows alike, so a checker can
// tell from the name alone that the fault loses and delays nothing
// (DuplicatesOnly).
func DuplicateName(link string, kinds []string) string {
	k := "all"
	if len(kinds) > 0 {
		k = strings.Join(kinds, "+")
	}
	return fmt.Sprintf("duplicate(%s,%s)", link, k)
}

// DuplicatesOnly reports whether the fault named name only forwards
// messages twice (DuplicateName): every message still arrives, in order,
// so it cannot explain one that never came or came late.
func DuplicatesOnly(name string) bool {
	inner, ok := strings.CutPrefix(name, "duplicate(")
	return ok && strings.HasSuffix(inner, ")")
}
