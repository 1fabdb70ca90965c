package reports_test

// failingRun is a recorded failing run: late-registration with
// unknown-room-waiting on, seed 7 (one fault window, a wedge, 14 stuck
// rooms). Periodic rooms snapshots were dropped to keep it small.
const failingRun = "testdata/late-registration-fail"
