package infra_test

import (
	"context"
	"testing"

	"github.com/orderflow-audit/orderflow-audit/runner/infra"
	"github.com/orderflow-audit/orderflow-audit/runner/infra/infratest"
)

func BenchmarkScratchDatabase(b *testing.B) {
	s := infratest.Server(b)
	for i := 0; b.Loop(); i++ {
		sc, err := s.CreateScratch(context.Background(), infra.ScratchName("bench", infratest.RandomID()), "bench")
		if err != nil {
			b.Fatal(err)
		}
		if err := sc.Drop(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
