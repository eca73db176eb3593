package blackbox

// ParallelRows is parallelRows, for a test that files every transaction
// on two cores.
var ParallelRows = &parallelRows
