package engine

import (
	"encoding/json"
	"net"
	"net/http"
	"time"
)

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

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(ErrorBody{Error: ErrorDetail{Message: msg, Type: http.StatusText(status), Code: status}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// loopbackOnly refuses debug endpoints to anything but loopback callers:
// they expose internal state and can pause the engine.
func loopbackOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			writeError(w, http.StatusForbidden, "debug endpoints answer loopback callers only")
			return
		}
		h(w, r)
	}
}

// RoomsResponse is /debug/rooms.
type RoomsResponse struct {
	Role    string       `json:"role"`
	Held    []RoomRecord `json:"held"`
	Cleared []RoomRecord `json:"cleared"`
}

// HooksRequest is the POST body of /debug/hooks.
type HooksRequest struct {
	Action string   `json:"action"` // pause, resume, resume-all
	Spec   HookSpec `json:"spec"`
}

// timeNow is the live runtime's clock; the core never reads it itself.
func timeNow() time.Time { return time.Now() }
