// Package doctor checks a target before a soak: that every role answers
// its health endpoint (and which endpoint: the router's /readiness or
// /health, the engines' /health_generate or /health), that metrics are on
// with the families the checks need (or their old names), which SGLang
// version serves, and which checks and fault layers will apply and why.
// `pdchaos doctor` prints its report and exits 3 for an unusable target,
// 2 when usable with reduced checks, 0 when everything applies.
//
// doctor may import contract, faults and harness/target; it must not
// import the engine runtime, harness itself, suites or Ginkgo.
package doctor
