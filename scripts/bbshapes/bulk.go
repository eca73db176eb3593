package main

import (
	"context"
	"errors"
)

func (s *server) bulk(ctx context.Context, out string, n int) error {
	return errors.New("not yet")
}
