package target

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine"
	"github.com/pdchaos/pdchaos/faults/hooks"
	"github.com/pdchaos/pdchaos/faults/process"
)

// Procs is the bundled engine run as three role processes (`pdchaos
// engine --role …`), so process faults (SIGSTOP, SIGKILL + restart) act on
// real processes. A role restarts on the addresses others reach it by, as
// a supervisor would restart it: its HTTP (and prefill's bootstrap and
// control) addresses. Decode's notify and KV sockets come back on fresh
// ports, as a real SGLang decode's ZMQ PULL and Mooncake transfer endpoint
// do: its registration announces them, so a restarted decode has a new
// session_id and prefill's late writes for the dead process fail. Links are listed for information only; Interpose is
// unsupported (the link table lives inside each process).
type Procs struct {
	bin   string
	cfg   contract.EngineConfig
	logw  io.Writer
	label string // run label on every role's command line
	// began is when the roles were first started, with its monotonic
	// reading: the wall clock has stepped by how far it now reads from
	// began plus the monotonic time since (passed to each start).
	began time.Time
	// routerBoot, if set, is the bootstrap address the router hands decode
	// in place of prefill's own (ProcsOptions.RouterBootstrap).
	routerBoot string

	mu      sync.Mutex
	procs   map[string]*roleProc
	prefill engine.PrefillAddrs
	decode  engine.DecodeAddrs
	router  string
}

// roleProc is one running role; done closes when Wait returns.
type roleProc struct {
	role string
	cmd  *exec.Cmd
	args []string
	done chan struct{}
}

var _ Target = (*Procs)(nil)

// readyLine is the one JSON line a role prints when it serves.
type readyLine struct {
	Role    string              `json:"role"`
	Prefill engine.PrefillAddrs `json:"prefill"`
	Decode  engine.DecodeAddrs  `json:"decode"`
	Router  string              `json:"router"`
	PID     int                 `json:"pid"`
}

// StartProcs starts prefill, decode and router from the pdchaos binary bin
// with cfg, each on OS-chosen loopback ports; stderr of the roles goes to
// logw (nil discards). Close stops them.
func StartProcs(ctx context.Context, bin string, cfg contract.EngineConfig, logw io.Writer) (*Procs, error) {
	return StartProcsWith(ctx, bin, cfg, ProcsOptions{Log: logw})
}

// ProcsOptions are StartProcsWith's optional settings; the zero value is
// StartProcs.
type ProcsOptions struct {
	// Log receives the roles' stderr; nil discards it.
	Log io.Writer
	// RouterBootstrap, if set, is the bootstrap host:port the router gives
	// decode instead of prefill's own, as a user points SGLang's router at
	// pdchaos's /route rewriter (--prefill URL PORT).
	RouterBootstrap string
}

// StartProcsWith is StartProcs with options.
func StartProcsWith(ctx context.Context, bin string, cfg contract.EngineConfig, o ProcsOptions) (*Procs, error) {
	logw := o.Log
	if logw == nil {
		logw = io.Discard
	}
	t := &Procs{bin: bin, cfg: cfg, logw: logw, procs: map[string]*roleProc{}, routerBoot: o.RouterBootstrap, began: time.Now(),
		label: process.RunLabel(os.Getpid(), time.Now().UnixNano())}
	fail := func(err error) (*Procs, error) {
		_ = t.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	rl, err := t.start(ctx, "prefill")
	if err != nil {
		return fail(err)
	}
	t.prefill = rl.Prefill
	if rl, err = t.start(ctx, "decode"); err != nil {
		return fail(err)
	}
	t.decode = rl.Decode
	if rl, err = t.start(ctx, "router"); err != nil {
		return fail(err)
	}
	t.router = rl.Router
	return t, nil
}

// engineArgs turns cfg into `pdchaos engine` flags: the whole config as
// one JSON flag (contract.EngineConfigFlag), so every setting a scenario
// gives reaches the role processes, including any added later (a flag per
// setting dropped chunk_pages, page_size and heartbeat_interval).
func engineArgs(cfg contract.EngineConfig) []string {
	b, err := json.Marshal(cfg)
	if err != nil {
		panic(fmt.Sprintf("engine config does not marshal: %v", err)) // plain data: cannot happen
	}
	return []string{"engine", "--" + contract.EngineConfigFlag + "=" + string(b)}
}

// roleArgs are the address flags of a role; on restart they pin the
// addresses it is reached by (decode's notify and KV sockets are left to
// the new process: see Procs).
func (t *Procs) roleArgs(role string) []string {
	switch role {
	case "prefill":
		if t.prefill.HTTP == "" {
			return []string{"--role=prefill"}
		}
		return []string{"--role=prefill", "--listen=" + t.prefill.HTTP, "--bootstrap-listen=" + t.prefill.Bootstrap,
			"--control-listen=" + strings.Join(t.prefill.Control, ",")}
	case "decode":
		if t.decode.HTTP == "" {
			return []string{"--role=decode"}
		}
		return []string{"--role=decode", "--listen=" + t.decode.HTTP}
	}
	boot := t.prefill.Bootstrap
	if t.routerBoot != "" {
		boot = t.routerBoot
	}
	a := []string{"--role=router", "--prefill-http=" + t.prefill.HTTP, "--prefill-bootstrap=" + boot,
		"--decode-http=" + t.decode.HTTP}
	if t.router != "" {
		a = append(a, "--listen="+strings.TrimPrefix(t.router, "http://"))
	}
	return a
}

// commandLine is the role's `pdchaos` arguments as started now: the
// engine config, its addresses, the run label and, for the roles that
// record rooms, how far the wall clock has stepped since the first start.
func (t *Procs) commandLine(role string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	args := append(engineArgs(t.cfg), t.roleArgs(role)...)
	args = append(args, "--"+contract.RunLabelFlag+"="+t.label)
	if role != "router" {
		args = append(args, "--"+contract.ClockStepFlag+"="+wallStep(t.began).String())
	}
	return args
}

// start execs a role and waits for its ready line. The process is not tied
// to ctx (it outlives the start call); Close ends it.
func (t *Procs) start(ctx context.Context, role string) (readyLine, error) {
	args := t.commandLine(role)
	cmd := exec.Command(t.bin, args...)
	cmd.Stderr = t.logw
	// Pdeathsig: a role dies with the harness however the harness dies
	// (kill -9 included), even when stopped; the run label lets `pdchaos
	// faults reset --leftovers` find any that still escape.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return readyLine{}, fmt.Errorf("start %s: %w", role, err)
	}
	if err := cmd.Start(); err != nil {
		return readyLine{}, fmt.Errorf("start %s (%s): %w", role, t.bin, err)
	}
	rp := &roleProc{role: role, cmd: cmd, args: args, done: make(chan struct{})}
	lines := make(chan string, 1)
	go func() { // owned by rp: ends when the process closes stdout
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
		close(rp.done)
	}()
	t.mu.Lock()
	t.procs[role] = rp
	t.mu.Unlock()
	timer := time.NewTimer(20 * time.Second)
	defer timer.Stop()
	select {
	case line, ok := <-lines:
		var rl readyLine
		if !ok {
			return rl, fmt.Errorf("start %s: exited before it was ready (args %v)", role, args)
		}
		if err := json.Unmarshal([]byte(line), &rl); err != nil {
			return rl, fmt.Errorf("start %s: read ready line %q: %w", role, line, err)
		}
		return rl, nil
	case <-ctx.Done():
		return readyLine{}, fmt.Errorf("start %s: %w", role, ctx.Err())
	case <-timer.C:
		return readyLine{}, fmt.Errorf("start %s: not ready within 20s", role)
	}
}

// Endpoint is the router URL.
func (t *Procs) Endpoint() string { return t.router }

// BootstrapURL is prefill's bootstrap server, as --bootstrap takes it.
func (t *Procs) BootstrapURL() string { return "http://" + t.prefill.Bootstrap }

// MetricsURLs lists prefill and decode /metrics.
func (t *Procs) MetricsURLs() []string {
	return []string{"http://" + t.prefill.HTTP + contract.PathMetrics, "http://" + t.decode.HTTP + contract.PathMetrics}
}

// EngineURLs lists prefill and decode base URLs.
func (t *Procs) EngineURLs() []string {
	return []string{"http://" + t.prefill.HTTP, "http://" + t.decode.HTTP}
}

// Links is empty: links between processes cannot be re-routed from here.
func (t *Procs) Links() []contract.Link { return nil }

// Interpose is unsupported for role processes.
func (t *Procs) Interpose(_ context.Context, link, _ string) (contract.Restore, error) {
	return nil, fmt.Errorf("interpose on link %q: %w: role processes keep their link table inside", link, contract.ErrUnsupported)
}

// Hooks speaks /debug/hooks to prefill and decode.
func (t *Procs) Hooks() (contract.Hooks, error) {
	return multiHooks{&hooks.HooksClient{BaseURL: "http://" + t.prefill.HTTP},
		&hooks.HooksClient{BaseURL: "http://" + t.decode.HTTP}}, nil
}

// Processes is the target itself.
func (t *Procs) Processes() (contract.Processes, error) { return t, nil }

// Roles lists the three roles.
func (t *Procs) Roles() []string { return []string{"router", "prefill", "decode"} }

// PID returns a role's current process id.
func (t *Procs) PID(role string) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rp, ok := t.procs[role]
	if !ok || rp.cmd.Process == nil {
		return 0, fmt.Errorf("pid of %s: no such role process", role)
	}
	return rp.cmd.Process.Pid, nil
}

// Restart starts a role again on its old addresses (killing it first if it
// still runs) and returns once it serves.
func (t *Procs) Restart(ctx context.Context, role string) error {
	t.mu.Lock()
	rp := t.procs[role]
	t.mu.Unlock()
	if rp == nil {
		return fmt.Errorf("restart %s: no such role process", role)
	}
	select {
	case <-rp.done:
	default:
		_ = rp.cmd.Process.Kill()
		select {
		case <-rp.done:
		case <-ctx.Done():
			return fmt.Errorf("restart %s: wait for old process: %w", role, ctx.Err())
		}
	}
	var err error
	for attempt := 0; attempt < 20; attempt++ { // the old listener may linger briefly
		var rl readyLine
		if rl, err = t.start(ctx, role); err == nil {
			if role == "decode" {
				t.mu.Lock()
				t.decode.Notify, t.decode.KV = rl.Decode.Notify, rl.Decode.KV // new sockets; its HTTP address stays
				t.mu.Unlock()
			}
			return nil
		}
		if ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("restart %s: %w", role, err)
}

// Health asks the router's /readiness and each engine's /health_generate,
// as on a real deployment (ProbeHealth).
func (t *Procs) Health(ctx context.Context) error {
	return ProbeHealth(ctx, t.router, EngineBases(t)).Err()
}

// Close sends SIGTERM (SIGCONT first, in case a fault stopped it) to every
// role, then SIGKILL to any still running when ctx ends or after 5s.
func (t *Procs) Close(ctx context.Context) error {
	t.mu.Lock()
	procs := make([]*roleProc, 0, len(t.procs))
	for _, rp := range t.procs {
		procs = append(procs, rp)
	}
	t.mu.Unlock()
	for _, rp := range procs {
		_ = rp.cmd.Process.Signal(syscall.SIGCONT)
		_ = rp.cmd.Process.Signal(syscall.SIGTERM)
	}
	timer := time.NewTimer(5 * time.Second)
	defer timer.Stop()
	var errs []error
	for _, rp := range procs {
		select {
		case <-rp.done:
		case <-timer.C:
			_ = rp.cmd.Process.Signal(os.Kill)
			<-rp.done
		case <-ctx.Done():
			_ = rp.cmd.Process.Signal(os.Kill)
			<-rp.done
			errs = append(errs, fmt.Errorf("close %s: killed: %w", rp.role, ctx.Err()))
		}
	}
	return errors.Join(errs...)
}

// ProcsSource opens a Procs from the pdchaos binary Bin.
type ProcsSource struct {
	// Bin is the pdchaos binary (os.Executable() from the CLI).
	Bin string
	// Log receives the roles' stderr; nil discards it.
	Log io.Writer
}

// Kind is "procs".
func (ProcsSource) Kind() string { return "procs" }

// Open starts the three role processes with cfg.
func (s ProcsSource) Open(ctx context.Context, cfg contract.EngineConfig) (Target, error) {
	if s.Bin == "" {
		return nil, errors.New("open procs target: no pdchaos binary given")
	}
	return StartProcs(ctx, s.Bin, cfg, s.Log)
}

// InProcess is false: the roles are other processes.
func (ProcsSource) InProcess() bool { return false }

// SetsEngine is true.
func (ProcsSource) SetsEngine() bool { return true }

// wallStep is how far the host's wall clock has moved from where the
// monotonic clock says it should be since began (an NTP step, a VM
// resumed): a role started now must start its clock that much behind.
func wallStep(began time.Time) time.Duration {
	now := time.Now()
	return now.Round(0).Sub(began.Round(0)) - now.Sub(began)
}
