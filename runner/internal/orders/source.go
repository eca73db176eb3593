package orders

import "embed"

// Source is this package's Go source (its tests included, which the
// digest leaves out), embedded so that the evidence names the code of the
// system under test that ran (runner/sut.ReferenceSource).
//
//go:embed *.go
var Source embed.FS
