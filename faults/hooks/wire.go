package hooks

import "github.com/pdchaos/pdchaos/engine"

// Path is where an engine mounts ServeHooks.
const Path = "/debug/hooks"

// Actions a POST to Path can ask for.
const (
	ActionPause     = "pause"
	ActionResume    = "resume"
	ActionResumeAll = "resume-all"
)

// Request is the body of a POST to Path. Spec is ignored for resume-all.
type Request struct {
	Action string          `json:"action"`
	Spec   engine.HookSpec `json:"spec"`
}

// errorBody is the JSON body of a failed request.
type errorBody struct {
	Error string `json:"error"`
}
