package binlog

// FastRowsCheck (tests): when true, every rows event the fast path reads
// is read by the decoder's path too, and a difference is an error.
var FastRowsCheck = &fastRowsCheck
