package mariadbd_test

import (
	"testing"

	"github.com/orderflow-audit/orderflow-audit/internal/mariadbd"
)

// BenchmarkStart measures what a run pays for its private server: Start
// (a fresh data directory, the server up and taking logins) and Remove
// (kill, delete the directory), with the template (copied) and without it
// (mariadb-install-db for every server).
//
//	go test -run '^$' -bench BenchmarkStart -benchtime 10x ./internal/mariadbd/
func BenchmarkStart(b *testing.B) {
	require(b)
	for _, bc := range []struct {
		name       string
		noTemplate bool
	}{{"template", false}, {"install-db", true}} {
		b.Run(bc.name, func(b *testing.B) {
			c := mariadbd.Config{Dir: b.TempDir(), TemplateDir: b.TempDir(), NoTemplate: bc.noTemplate}
			if !bc.noTemplate { // the template is made once per installation: not measured
				s, err := mariadbd.Start(b.Context(), c)
				if err != nil {
					b.Fatal(err)
				}
				s.Remove()
			}
			for b.Loop() {
				s, err := mariadbd.Start(b.Context(), c)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Remove(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
