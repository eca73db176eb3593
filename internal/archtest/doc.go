// Package archtest holds no code, only the test that keeps the module's
// layout as docs/design.md draws it: every package's imports point down
// the layers (foundation, evidence, then the verifier and the runner side
// by side and blind to each other, then reports, then the command), and
// no non-test Go file is over 500 lines.
package archtest
