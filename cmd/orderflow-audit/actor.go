package main

import (
	"context"
	"io"
)

// envJWTSecret holds the order service's HS256 secret, hex encoded.
const envJWTSecret = "ORDERFLOW_JWT_SECRET"

func cmdActor(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return fail(stderr, "actor", usageErrorf("not implemented yet"))
}
