// Package scenarios holds the preset scenario files (YAML) that `pdchaos
// run NAME`, `make run` and the Ginkgo suites use. It only embeds them: no
// Ginkgo, no harness import, so harness and cmd can read it without
// depending on suites.
package scenarios

import "embed"

// FS holds every preset scenario, named <preset>.yaml at its root, so the
// binary carries them and needs no checkout to run a preset.
//
//go:embed *.yaml
var FS embed.FS
