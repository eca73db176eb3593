package runner

import (
	"context"
	"time"

	"github.com/orderflow-audit/orderflow-audit/runner/infra"
)

// preflightTimeout bounds the check of an external server's account
// (a few dozen milliseconds when it answers).
const preflightTimeout = 15 * time.Second

// preflight checks, before any scenario runs, that the account of an
// external server may do what the selected scenarios do
// (infra.CheckPrivileges, with privilegeNeeds):
// an account that may not is refused with every missing privilege named
// (exit 3), instead of failing every scenario. The private server and a
// container are the run's own, with root. Its database is
// ofa_preflight_<run id>, not a scenario's ofa_<run id>_<scenario>.
func (rs *runScope) preflight(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	selected, _ := SelectModes(rs.opts.Scenarios, rs.opts.ConsumerMode)
	var needs infra.Needs
	for _, sc := range selected {
		n := privilegeNeeds[sc.Base()]
		needs.Trigger = needs.Trigger || n.Trigger
		needs.Process = needs.Process || n.Process
	}
	return rs.server.CheckPrivileges(pctx, infra.ScratchName("preflight", rs.runID), needs)
}

// privilegeNeeds are the scenarios that need more of the server's account
// than their scratch database: effectDbError creates a trigger and kills
// the consumer's connection, found in information_schema.INNODB_TRX;
// chaos kills connections found there too.
var privilegeNeeds = map[string]infra.Needs{
	"effectDbError": {Trigger: true, Process: true},
	"chaos":         {Process: true},
}
