package protocol

import (
	"slices"
	"time"
)

// Action is what a rule does to a message it matches.
type Action int

// Actions.
const (
	// ActPass forwards the message unchanged (useful to shield a kind from a
	// later, broader rule).
	ActPass Action = iota
	// ActDelay forwards the message after Rule.Delay(msg).
	ActDelay
	// ActHold keeps the message until a release condition (ReleaseOnAbort,
	// ReleaseAfter, MaxHold) or until the proxy is released or closed.
	ActHold
	// ActDrop discards the message.
	ActDrop
	// ActDuplicate forwards the message twice in a row.
	ActDuplicate
	// ActCorrupt forwards Rule.Corrupt's frames in place of the message's.
	ActCorrupt
)

// Message is one whole multipart message seen on the PUSH→PULL direction,
// with its classification, as rules and predicates see it.
type Message struct {
	Frames [][]byte
	Kind   Kind
	// Room is valid when HasRoom is true (metadata, abort, ack, status,
	// aux and most staging messages).
	Room    uint64
	HasRoom bool
}

// Rule selects messages and says what to do with them. Rules are tried in
// order; the first that matches decides. Zero-value selectors match
// everything the classifier knows, so Rule{Action: ActDrop} drops every
// classified message; a KindUnknown message is matched only by a rule
// whose Kinds name it, so no fault acts on what it cannot see.
type Rule struct {
	// Kinds limits the rule to these kinds; empty means every kind but
	// KindUnknown.
	Kinds []Kind
	// Rooms limits the rule to these rooms; empty means any (and messages
	// without a room).
	Rooms []uint64
	// Match is an extra predicate; nil means true.
	Match func(Message) bool
	// Limit stops the rule after it has acted on this many messages; 0 is
	// unlimited.
	Limit int

	Action Action
	// Delay gives each delayed message its delay (the caller draws it,
	// from a seeded source). Required for Delay.
	Delay func(Message) time.Duration
	// KeepOrder makes later messages on the same connection wait behind a
	// delayed one (a slow link); otherwise they overtake it (a reorder).
	KeepOrder bool
	// ReleaseOnAbort releases a held message once the ABORT for its room
	// has been forwarded (ABORT delivered before the message); a message
	// whose room's ABORT has already passed is not held.
	ReleaseOnAbort bool
	// ReleaseAfter releases a held message after this many later messages
	// have been forwarded; 0 disables it.
	ReleaseAfter int
	// MaxHold releases a held message after this long; 0 means no limit
	// (until another condition, Release or Close).
	MaxHold time.Duration
	// Corrupt gives a corrupted message its frames. Required for Corrupt.
	Corrupt func(Message) [][]byte

	used int
}

func (r *Rule) matches(m Message) bool {
	if r.Limit > 0 && r.used >= r.Limit {
		return false
	}
	if len(r.Kinds) > 0 && !slices.Contains(r.Kinds, m.Kind) {
		return false
	}
	if m.Kind == KindUnknown && !slices.Contains(r.Kinds, KindUnknown) {
		return false
	}
	if len(r.Rooms) > 0 && (!m.HasRoom || !slices.Contains(r.Rooms, m.Room)) {
		return false
	}
	return r.Match == nil || r.Match(m)
}
