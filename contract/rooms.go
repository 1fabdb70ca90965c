package contract

import "time"

// Room state names as /debug/rooms reports them: SGLang's KVPoll values, and
// StateCleared for a room no rank holds any more.
const (
	StateFailed          = "Failed"
	StateBootstrapping   = "Bootstrapping"
	StateWaitingForInput = "WaitingForInput"
	StateTransferring    = "Transferring"
	StateSuccess         = "Success"
	StateCleared         = "cleared"
)

// TerminalState reports whether a state name is Failed or Success.
func TerminalState(s string) bool { return s == StateFailed || s == StateSuccess }

// MaxRoomEvents is how many events the engine keeps per room record
// (clears are always kept beyond it): a record holding this many has
// perhaps lost some, so a checker must not read time spans from it.
const MaxRoomEvents = 64

// Event is one thing that happened to a room on one rank.
type Event struct {
	At     time.Time `json:"at"`
	Side   string    `json:"side"`
	Rank   int       `json:"rank"`
	Kind   string    `json:"kind"`
	State  string    `json:"state"`
	Detail string    `json:"detail,omitempty"`
}

// RoomRecord is a room's current state and history as /debug/rooms shows it.
type RoomRecord struct {
	Room      uint64         `json:"room"`
	Side      string         `json:"side"`
	State     string         `json:"state"` // last status written (on any rank), or StateCleared
	Ranks     map[int]string `json:"ranks"` // per rank status while held
	Cleared   bool           `json:"cleared"`
	LastState string         `json:"last_state"` // status just before clear
	Events    []Event        `json:"events"`
	Created   time.Time      `json:"created"`
	Updated   time.Time      `json:"updated"`
}

// RoomsResponse is the body of PathDebugRooms.
type RoomsResponse struct {
	Role    string       `json:"role"`
	Held    []RoomRecord `json:"held"`
	Cleared []RoomRecord `json:"cleared"`
}
