package contract

// Checker names, in the order a run judges and reports them. The harness's
// checkers are registered under these names (a test there keeps the two in
// step); the regression catalogue names the checker that catches each race.
const (
	CheckRoomsTerminal  = "rooms-terminal"
	CheckSlotsReleased  = "slots-released"
	CheckLiveness       = "liveness"
	CheckClientOutcomes = "client-outcomes"
	CheckIntegrity      = "integrity"
	CheckNoLeaks        = "no-leaks"
	CheckFaultsVerified = "faults-verified"
	CheckLoadFloor      = "load-floor"
	// CheckCancelsReached: every client cancel reached both prefill and
	// decode (the room recorded the abort or ended there) within a bound.
	CheckCancelsReached = "cancels-reached"
	// CheckTimeoutsExplained: every backstop (Backstops) that fired is
	// explained by a fault, a regression, load or a race, and no room
	// outstays its state's deadline (StateDeadlines).
	CheckTimeoutsExplained = "timeouts-explained"
	// CheckUnreachableBranches: no code probe the run should never hit
	// (UnexpectedProbes: a Never probe on the fixed engine, a regression's
	// branch with it off) was hit.
	CheckUnreachableBranches = "unreachable-branches"
	// CheckBranchesRecorded: every probe hit whose branch records a room
	// event (Probe.Records) left exactly one: a failure branch the engine
	// took is never missing from /debug/rooms.
	CheckBranchesRecorded = "branches-recorded"
)

// CheckNames lists every checker in judging order.
func CheckNames() []string {
	return []string{CheckRoomsTerminal, CheckSlotsReleased, CheckLiveness, CheckClientOutcomes,
		CheckCancelsReached, CheckTimeoutsExplained, CheckIntegrity, CheckUnreachableBranches, CheckBranchesRecorded, CheckNoLeaks, CheckFaultsVerified, CheckLoadFloor}
}
