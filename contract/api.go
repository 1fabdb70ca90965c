package contract

// Endpoint paths. The router serves the OpenAI and /generate routes; each
// engine role serves /generate, the health and metrics routes, and the
// loopback-only debug routes; prefill's bootstrap server serves PathRoute.
const (
	PathChatCompletions = "/v1/chat/completions"
	PathCompletions     = "/v1/completions"
	PathModels          = "/v1/models"
	PathGenerate        = "/generate"
	PathHealth          = "/health"
	PathHealthGenerate  = "/health_generate"
	// PathReadiness is the router's readiness (SGLang's model gateway):
	// 200 only while at least one prefill and one decode are healthy, else
	// 503 with a JSON body (ReadinessBody) naming what is not. The
	// gateway's /health and PathLiveness are liveness only (always 200).
	// Engines do not serve it.
	PathReadiness = "/readiness"
	// PathLiveness is the router's liveness: 200 while it serves.
	PathLiveness     = "/liveness"
	PathMetrics      = "/metrics"
	PathAbortRequest = "/abort_request"
	PathServerInfo   = "/get_server_info"
	PathRoute        = "/route"
	// PathDebugRooms lists every room with its state and event history
	// (RoomsResponse); loopback callers only.
	PathDebugRooms = "/debug/rooms"
	// HooksPath serves the engine's pause gates (HooksRequest, HookState);
	// loopback callers only.
	HooksPath = "/debug/hooks"
)

// ReadinessBody is the router's /readiness answer.
type ReadinessBody struct {
	// Status is "ready" or "not ready".
	Status string `json:"status"`
	// Unhealthy names each role that did not answer its /health, with why.
	Unhealthy []string `json:"unhealthy,omitempty"`
}

// RoomHeader is the response header in which the router reports the
// bootstrap room it chose, so a client outcome can be joined with the
// engines' room records.
const RoomHeader = "X-PD-Bootstrap-Room"

// GenerateRequest is SGLang's /generate body, with the PD bootstrap fields
// the router adds.
type GenerateRequest struct {
	Rid            string         `json:"rid,omitempty"`
	Text           string         `json:"text"`
	SamplingParams SamplingParams `json:"sampling_params"`
	Stream         bool           `json:"stream"`
	BootstrapHost  string         `json:"bootstrap_host,omitempty"`
	BootstrapPort  int            `json:"bootstrap_port,omitempty"`
	BootstrapRoom  *uint64        `json:"bootstrap_room,omitempty"`
}

// SamplingParams carries what the fake model honours.
type SamplingParams struct {
	MaxNewTokens int `json:"max_new_tokens,omitempty"`
}

// GenerateChunk is one /generate response (or one streamed event). Text is
// cumulative, as SGLang streams it.
type GenerateChunk struct {
	Text     string   `json:"text"`
	MetaInfo MetaInfo `json:"meta_info"`
}

// MetaInfo is SGLang's per-response metadata.
type MetaInfo struct {
	ID               string        `json:"id"`
	PromptTokens     int           `json:"prompt_tokens"`
	CompletionTokens int           `json:"completion_tokens"`
	FinishReason     *FinishReason `json:"finish_reason"`
	BootstrapRoom    uint64        `json:"bootstrap_room,omitempty"`
}

// FinishReason is SGLang's finish reason object.
type FinishReason struct {
	Type    string `json:"type"`
	Length  int    `json:"length,omitempty"`
	Message string `json:"message,omitempty"`
}

// ErrorBody is the OpenAI-style error body every role uses.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail describes an error.
type ErrorDetail struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
}

// PathDebugProbes lists every code probe of the role with its hit count
// (ProbesResponse); loopback callers only.
const PathDebugProbes = "/debug/probes"
