// Package reports renders stored runs for people and CI: report.html per run
// (self-contained: inline CSS and SVG, nothing loaded from the network), an
// index.html per soak, junit.xml per run and per soak, and repro bundles (one
// small file with the resolved scenario, seed, verdict, evidence and the
// events around the violations).
//
// It reads only what a run directory holds (result.json, events.jsonl,
// repro.yaml), so any stored run can be rendered again with today's code
// (`pdchaos report RUN_DIR`). It decodes result.json into its own view
// (RunResult) instead of importing the harness.
//
// Layout: run.go loads a run directory; charts.go draws the timelines with
// gonum/plot; html.go and page.tmpl render report.html; soak.go the soak
// index; junit.go the JUnit XML; bundle.go the repro bundle.
//
// reports may import the standard library, contract, harness/check (the
// event and verdict types), gonum/plot and YAML. It must not import the
// engine runtime (engine, engine/core), the fault injectors, the agents'
// runtime, harness or its other subpackages, or Ginkgo;
// contract/imports_test.go holds it to that.
package reports
