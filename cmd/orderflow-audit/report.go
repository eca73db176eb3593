package main

import (
	"context"
	"fmt"
	"io"
)

// cmdReport is a stub: another engineer replaces this file.
func cmdReport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("report", "report [flags] EVIDENCE", "Not implemented yet.", "orderflow-audit report evidence/u80.json")
	if code, ok := fs.parse(args, stdout, stderr); !ok {
		return code
	}
	fmt.Fprintln(stderr, "orderflow-audit report: not implemented yet")
	return exitUsage
}
