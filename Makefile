# pdchaos — every command a person runs is a target here.
GO        ?= go
BIN       := bin/pdchaos
DURATION  ?= 1m
TARGET    ?= bundled
RESULTS_DIR ?= $(CURDIR)/runs
LABELS    ?=
FUZZTIME  ?= 1m
# Packages with goroutines and sockets run under the race detector.
# harness first: its scenario runs are the longest, so they start at once.
RACE_PKGS := ./harness/... ./engine/... ./faults/... ./agents/...

.PHONY: all build run test test-race test-short lint gate soak repro report screenshots bench bench-go deps clean fuzz stress interrupt-runs catch-rates seed-sweep hostile gate-mutants sim sim-coverage sim-sweep test-mutant planted-bugs

all: build

build:
	$(GO) build -o $(BIN) ./cmd/pdchaos

## run: a one-minute soak of the preset scenarios on the in-process bundled engine, with a report
run: build
	$(BIN) soak --duration $(DURATION) --results $(RESULTS_DIR)

## deps: test-only system dependencies (python3-zmq for the ZMTP interop tests, xmllint for JUnit validation)
deps:
	@bash scripts/setup-test-deps.sh || echo "warning: python3-zmq or libxml2-utils could not be installed; ZMTP interop tests and JUnit schema validation will skip (set PDCHAOS_REQUIRE_PYZMQ=1 / PDCHAOS_REQUIRE_XMLLINT=1 to fail instead)" >&2

## test: everything CI runs — vet, race detector on concurrent packages, all tests except the
## Ginkgo gate (minutes of scenario runs: `make gate`), and test-mutant
# The race run is bound by harness's scenario runs, which mostly wait on the
# clock, so the other packages' tests run beside it rather than after it.
# Harness's own scenario tests are split over two processes (HARNESS_SPLIT in
# one, the rest with the other race packages): a run in-process judges
# no-leaks by the goroutines of its whole process, so two runs cannot share
# one, and in one process they ran one after another for five minutes.
HARNESS_SPLIT := ^(TestExternalOnProcs|TestExternalInterposedOnProcs|TestRunLoggedGauges)$$
test: deps
	$(GO) vet ./...
	@$(GO) test -race -count=1 -timeout 8m -run '$(HARNESS_SPLIT)' ./harness & split=$$!; \
	$(GO) test -race -count=1 -timeout 8m -skip '$(HARNESS_SPLIT)' $(RACE_PKGS) & race=$$!; \
	$(GO) test -count=1 -timeout 8m $$($(GO) list ./... | grep -v -e /engine -e /faults -e /agents -e /harness -e /suites/gate) \
		&& $(GO) test -race -count=1 -run TestSameSeedSameTrace ./sim/scenario \
		&& $(GO) test -tags pdchaos_mutant -count=1 -run TestMutantFound ./sim/scenario; rest=$$?; \
	wait $$race; race=$$?; wait $$split; split=$$?; \
	if [ $$race -ne 0 ] || [ $$split -ne 0 ] || [ $$rest -ne 0 ]; then echo "make test: race run exit $$race, harness split exit $$split, other packages exit $$rest" >&2; exit 1; fi

## fuzz: every native fuzz target (listed by `go test -list '^Fuzz' ./...`) in turn, one at a
## time, each for FUZZTIME (default 1m), e.g. make fuzz FUZZTIME=10m. Stops at the first crasher
## and prints the path of its input under the package's testdata/fuzz/FuzzX/, which `make test`
## then replays as a regression test; commit it with the fix.
fuzz:
	GO=$(GO) bash scripts/fuzz.sh $(FUZZTIME) ./...

## catch-rates: every catch of the catalogue (each regression's own and GATE.md's extra ones) over
## SEEDS seeds (default 5), counting a seed only when that catch's checker failed; CATCHES=own
## measures each regression's own catch only (the gate's 19-of-20 target: make catch-rates SEEDS=20 CATCHES=own)
catch-rates: build
	CATCHES=$(or $(CATCHES),all) RESULTS_DIR=$(RESULTS_DIR) bash scripts/catch-rates.sh $(or $(SEEDS),5)

## seed-sweep: every preset on the fixed engine and every regression in its catching scenario over
## seeds 1..SEEDS (default 20), JOBS runs at a time (default 2), each with the same extra run flags
## ARGS (e.g. ARGS="--gauges logged" or ARGS="--gauges logged --no-loads"); PART=presets|regressions
## narrows it (PRESETS="a b" to some presets). Writes RESULTS_DIR/seed-sweep/<flags>/runs.tsv and prints per preset the passes and per
## regression the seeds its own checker caught with the median time to the first room-age and gauge wedge
seed-sweep: build
	JOBS=$(or $(JOBS),2) PART=$(or $(PART),all) PRESETS="$(PRESETS)" RESULTS_DIR=$(RESULTS_DIR) bash scripts/seed-sweep.sh $(or $(SEEDS),20) $(ARGS)

## gate-mutants: the gate's mutation self-test. For each code probe's branch, a scratch copy of the
## module (under $TMPDIR, never committed) with that branch broken (kinds: skip the handling, take
## the wrong exit), built and run against the presets that reach the probe (a coverage run of every
## preset at SEED first, or COVERAGE=a runs dir or coverage.json); writes RESULTS_DIR/mutants.md
## and mutants.json and prints caught/missed/not reached by checker. PROBES=names or substrings, in order
## (e.g. PROBES=abort,ack LIMIT=10); MAX_RUNS presets per mutant (default 2). List them: make
## gate-mutants ARGS=--list. SIM=N screens the engine/core mutants in the simulator instead (N seeds of each
## reaching preset, in its own dialect and in Mooncake's, minutes instead of an hour; raise MAX_RUNS to try
## more presets; SWARM=M adds M swarm seeds to each, as the gate runs 60)
gate-mutants:
	$(GO) run ./cmd/pdchaos-mutants --results $(RESULTS_DIR) --seed $(or $(SEED),1) \
		--max-runs $(or $(MAX_RUNS),2) $(if $(PROBES),--probes $(PROBES)) $(if $(LIMIT),--limit $(LIMIT)) \
		$(if $(COVERAGE),--coverage $(COVERAGE)) $(if $(SIM),--sim $(SIM)) $(if $(SWARM),--sim-swarm $(SWARM)) $(ARGS)

## planted-bugs: the bugs planted off the probe sites (suites/planted-bugs.json), each alone in a
## scratch copy of the module, every preset swept in the simulator in both dialects (SIM seeds,
## default 30, and SWARM swarm seeds, default 30); writes RESULTS_DIR/planted.md and planted.json.
## ONLY=name,name screens those. About 3 minutes a bug on 2 cores.
planted-bugs:
	$(GO) run ./cmd/pdchaos-mutants --planted suites/planted-bugs.json --results $(RESULTS_DIR) \
		--sim $(or $(SIM),30) --sim-swarm $(or $(SWARM),30) $(if $(ONLY),--only $(ONLY)) $(ARGS)

## stress: the concurrent packages' tests COUNT times (default 3) under the race detector, shuffled,
## with a CPU burner per core (scripts/stress.sh): flaky tests show up here, not in CI
stress:
	GO=$(GO) bash scripts/stress.sh $(or $(COUNT),3)

## interrupt-runs: N runs (default 100) across the presets, each interrupted at a seeded random
## moment by SIGINT, SIGTERM or SIGKILL; fails if any left a role process, a stopped process or a
## listening socket behind, or if the harness hung (scripts/interrupt-runs.sh)
interrupt-runs:
	GO=$(GO) bash scripts/interrupt-runs.sh $(or $(N),100) $(or $(SEED),1)

## hostile: the hostile-target matrix (docs/hostile-targets.md): run, watch, doctor and soak, as
## processes of the built CLI, against every hostile behaviour of internal/testkit/hostile; prints
## behaviour x command -> exit code, wall time, deadline, peak RSS and reason, and writes the table
## to HOSTILE_TABLE (default runs/hostile-table.md). About 17 minutes on 2 busy cores; make test runs a quick subset.
HOSTILE_TABLE ?= $(RESULTS_DIR)/hostile-table.md
hostile:
	@mkdir -p $(dir $(HOSTILE_TABLE))
	PDCHAOS_HOSTILE=full PDCHAOS_HOSTILE_TABLE=$(HOSTILE_TABLE) $(GO) test -count=1 -timeout 60m -run 'TestHostileTargets$$' ./cmd/pdchaos/; \
		status=$$?; cat $(HOSTILE_TABLE); exit $$status

test-short:
	$(GO) test -short -count=1 ./...

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...

## gate: pre-release gate, the Ginkgo suite in suites/gate: every preset passes on the fixed
## engine and every regression is caught by its scenario. JUnit lands in RESULTS_DIR/junit.xml,
## failed specs keep their runs under RESULTS_DIR/gate/. Narrow it with a label query, e.g.
## make gate LABELS='regression:rank-desync || fault:reset-peer'
gate:
	@mkdir -p $(RESULTS_DIR)
	PDCHAOS_RESULTS_DIR=$(RESULTS_DIR) $(GO) test -count=1 -timeout 45m -v ./suites/gate/ -ginkgo.v \
		-ginkgo.junit-report=$(RESULTS_DIR)/junit.xml $(if $(LABELS),-ginkgo.label-filter='$(LABELS)')

## soak: long soak, e.g. make soak DURATION=8h TARGET=external ARGS="--router http://... --metrics ..."
soak: build
	$(BIN) soak --duration $(DURATION) --target $(TARGET) --results $(RESULTS_DIR) $(ARGS)

## repro: replay a run dir, repro.yaml or bundle COUNT times (default 1),
## e.g. make repro BUNDLE=runs/abort-storm-42-....bundle.yaml COUNT=5
repro: build
	$(BIN) repro $(BUNDLE) --count $(or $(COUNT),1)

## report: render report.html and junit.xml of stored runs again, e.g. make report RUNS="runs/a runs/b"
report: build
	$(BIN) report $(RUNS)

## screenshots: a run's report.html in headless Chromium (Debian's package, installed if missing),
## e.g. make screenshots RUN=runs/abort-storm-42-... (PNGs under RUN/screenshots/)
screenshots:
	bash scripts/report-screenshots.sh $(RUN)

## repro-REGRESSION: catch rate of a known regression over SEEDS seeds (default 20),
## e.g. make repro-free-before-ack SEEDS=20 (the gate wants at least 19 of 20 for a probabilistic catch)
repro-%: build
	RESULTS_DIR=$(RESULTS_DIR) bash scripts/catch-rate.sh $* $(or $(SEEDS),20)

## sim: explore SCENARIO (a preset or file) in the deterministic simulator over SEEDS (default
## 1..100) on every core, e.g. make sim SCENARIO=abort-storm ARGS="--regression decode-abort-leak --first"
## or ARGS="--swarm --probes"; replay one with bin/pdchaos sim SCENARIO --seed S --trace
sim: build
	$(BIN) sim $(SCENARIO) --seeds $(or $(SEEDS),1..100) $(ARGS)

## sim-coverage: code probe coverage in the simulator over every preset (both dialects, plain and swarm
## seeds 1..SEEDS, default 30) and every regression in the presets that catch it; fails when an
## engine/core probe is hit by none (scripts/sim-coverage.sh)
sim-coverage: build
	PDCHAOS=$(BIN) RESULTS_DIR=$(RESULTS_DIR) bash scripts/sim-coverage.sh $(or $(SEEDS),30)

## sim-sweep: the fixed engine over TOTAL simulated seeds (default 100000) across every preset, half
## plain and half with swarm draws; a table of seeds, failures, wall time and simulated requests, and
## each failing seed's replay command (scripts/sim-sweep.sh; about 75 minutes on 2 cores)
sim-sweep: build
	PDCHAOS=$(BIN) RESULTS_DIR=$(RESULTS_DIR) bash scripts/sim-sweep.sh $(or $(TOTAL),100000)

## test-mutant: the simulator finds a deliberately broken failure path no regression names
## (engine/core built with -tags pdchaos_mutant: orphan transfer infos never swept)
test-mutant:
	$(GO) test -tags pdchaos_mutant -count=1 -run TestMutantFound ./sim/scenario

## bench: measure the engine (against a bare net/http handler), the harness (against vegeta
## alone) and the memory of a MEMORY_DURATION soak and watch (default 30m), each figure beside
## its reference from the same run; writes RESULTS_DIR/bench/bench.json and bench.md. BASE=an
## older bench.json lists the figures worse by more than THRESHOLD (default 0.2) and fails.
## A quick one: make bench PARTS=engine,harness
PARTS           ?= engine,harness,detect,memory
MEMORY_DURATION ?= 30m
THRESHOLD       ?= 0.2
bench: build
	$(BIN) bench --out $(RESULTS_DIR)/bench --parts $(PARTS) --memory-duration $(MEMORY_DURATION) \
		$(if $(BASE),--base $(BASE) --threshold $(THRESHOLD))

## bench-go: the Go micro-benchmarks (swarm and vegeta CPU per request, engine internals)
bench-go:
	$(GO) test -run='^$$' -bench=. -benchtime=2000x ./agents/ ./engine/...

clean:
	rm -rf bin runs

## profiles: every preset once (SEED, default 1) on the fixed engine and under each upstream
## profile (--profile sglang-nixl|sglang-mooncake): which presets fail on SGLang's defaults;
## PRESETS="a b" limits the presets
.PHONY: profiles
profiles: build
	RESULTS_DIR=$(RESULTS_DIR) PRESETS="$(PRESETS)" bash scripts/profiles.sh $(or $(SEED),1)
