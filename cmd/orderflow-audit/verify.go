package main

import (
	"context"
	"fmt"
	"io"
)

// cmdVerify is a stub: another engineer replaces this file.
func cmdVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("verify", "verify [flags] EVIDENCE", "Not implemented yet.", "orderflow-audit verify evidence/u80.json")
	if code, ok := fs.parse(args, stdout, stderr); !ok {
		return code
	}
	fmt.Fprintln(stderr, "orderflow-audit verify: not implemented yet")
	return exitUsage
}
