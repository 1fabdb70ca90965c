package hooks

import "github.com/pdchaos/pdchaos/engine"

// Path is where an engine serves its hooks (engine.ServeHooks).
const Path = engine.HooksPath

// Actions a POST to Path can ask for.
const (
	ActionPause     = engine.HookActionPause
	ActionResume    = engine.HookActionResume
	ActionResumeAll = engine.HookActionResumeAll
)

// Request is the body of a POST to Path. Spec is ignored for resume-all.
type Request = engine.HooksRequest
