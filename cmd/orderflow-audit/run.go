package main

import (
	"context"
	"fmt"
	"io"
)

// cmdRun is a stub: another engineer replaces this file.
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("run", "run [flags]", "Not implemented yet.", "orderflow-audit run")
	if code, ok := fs.parse(args, stdout, stderr); !ok {
		return code
	}
	fmt.Fprintln(stderr, "orderflow-audit run: not implemented yet")
	return exitUsage
}
