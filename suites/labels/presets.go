package labels

// PresetLabels are the labels a preset scenario gets in the gate beyond
// those derived from its fault kinds: the components it stresses and
// whether it is disruptive (kills or restarts processes).
type PresetLabels struct {
	Components []string
	Disruptive bool
}

// Presets gives each preset scenario its gate labels. Which presets exist is
// the folder suites/scenarios; TestEveryPresetHasLabels fails, naming it,
// when a preset file has no entry here or an entry has no file.
func Presets() map[string]PresetLabels {
	return map[string]PresetLabels{
		"abort-storm":              {[]string{"engine"}, false},
		"kill-all-cascade":         {[]string{"engine", "agents"}, false},
		"abort-overtakes-metadata": {[]string{"control-link", "prefill"}, false},
		"late-registration":        {[]string{"control-link"}, false},
		"paused-transfer-workers":  {[]string{"transfer"}, false},
		"control-link-reset":       {[]string{"control-link"}, false},
		"decode-restart":           {[]string{"decode", "procs"}, true},
		"tp2-abort-storm":          {[]string{"tp"}, false},
		"stale-kv-writes":          {[]string{"kv-pool", "transfer"}, false},
		"kv-chunks-out-of-order":   {[]string{"transfer", "kv-pool"}, false},
		"kv-link-faults":           {[]string{"transfer", "decode"}, false},
		"kv-link-slow":             {[]string{"transfer", "decode"}, false},
		"lost-control-messages":    {[]string{"control-link", "prefill", "decode"}, false},
		"corrupt-control-messages": {[]string{"control-link", "prefill", "decode"}, false},
		"rid-retries":              {[]string{"router", "prefill", "decode"}, false},
		"room-retries":             {[]string{"router", "prefill", "decode"}, false},
		"kv-pool-pressure":         {[]string{"kv-pool", "prefill", "decode"}, false},
		"long-answers":             {[]string{"decode", "router", "agents"}, false},
		"abort-requests":           {[]string{"prefill", "decode", "agents"}, false},
		"bootstrap-deadline":       {[]string{"bootstrap", "prefill", "procs"}, false},
		"abort-timeout-race":       {[]string{"decode", "control-link", "transfer"}, false},
		"tp2-rank-lost":            {[]string{"tp", "prefill"}, false},
		"tp2-kv-link-faults":       {[]string{"tp", "transfer", "decode"}, false},
		"prefill-lost":             {[]string{"prefill", "decode", "procs"}, false},
		"prefill-lost-mooncake":    {[]string{"prefill", "decode", "procs"}, false},
		"prefill-flaps":            {[]string{"prefill", "decode", "procs"}, false},
		"prefill-restart":          {[]string{"prefill", "decode", "procs"}, true},
		"push-queues-full":         {[]string{"control-link", "prefill", "decode"}, false},
		"kv-write-broken":          {[]string{"transfer", "prefill"}, false},
		"late-prefill-requests":    {[]string{"router", "prefill", "bootstrap"}, false},
		"late-fail-notices":        {[]string{"decode", "control-link", "router"}, false},
		"late-room-retries":        {[]string{"prefill", "bootstrap", "router"}, false},
	}
}
