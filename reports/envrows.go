package reports

import (
	"fmt"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/evidence"
)

// The rows of the run-and-environment table that name the code that ran.

// buildRow says how the binary was built, as the Go toolchain stamped it.
func buildRow(b *evidence.BuildInfo) string {
	if b == nil {
		return "not recorded (evidence of an older version)"
	}
	rev := "not stamped"
	switch b.Stamp {
	case evidence.StampVCS:
		rev = "vcs revision " + b.VCSRevision
	case evidence.StampLDFlags:
		rev = "revision " + b.VCSRevision + " (passed by -ldflags: the toolchain could not stamp it)"
	}
	if b.Stamp != evidence.StampNone {
		rev += ", modified " + yesNo(b.VCSModified)
	}
	if b.VCSTime != "" {
		rev += ", committed " + b.VCSTime
	}
	return fmt.Sprintf("%s %s, %s; %s", b.Module, b.ModuleVersion, b.GoVersion, rev)
}

// sutRow names the system under test and the digest of its source.
func sutRow(s *evidence.SUTEnv) string {
	if s == nil {
		return "not recorded (evidence of an older version: the reference implementation)"
	}
	out := s.Name
	if s.Source == nil {
		return out + "; source digest not recorded"
	}
	return fmt.Sprintf("%s; source sha256 %s (%d files of %s)", out, s.Source.SHA256, s.Source.Files, strings.Join(s.Source.Packages, ", "))
}
