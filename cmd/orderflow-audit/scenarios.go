package main

import (
	"context"
	"fmt"
	"io"
)

// cmdScenarios is a stub: another engineer replaces this file.
func cmdScenarios(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("scenarios", "scenarios [flags]", "Not implemented yet.", "orderflow-audit scenarios")
	if code, ok := fs.parse(args, stdout, stderr); !ok {
		return code
	}
	fmt.Fprintln(stderr, "orderflow-audit scenarios: not implemented yet")
	return exitUsage
}
