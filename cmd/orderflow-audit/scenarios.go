package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/orderflow-audit/orderflow-audit/runner"
)

// scenariosWidth is the width the scenario list is wrapped to.
const scenariosWidth = 80

func cmdScenarios(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("scenarios", "scenarios",
		"Lists the scenarios that 'run' knows, in run order: for each its id, suite,\nboundary, fault points and what it does.",
		"orderflow-audit scenarios")
	if code, ok := fs.parse(args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return fail(stderr, "scenarios", usageErrorf("unexpected argument %q", fs.Arg(0)))
	}
	for i, s := range runner.Scenarios() {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		fp := strings.Join(s.FaultPoints(), ", ")
		if fp == "" {
			fp = "-"
		}
		optIn := ""
		if s.OptIn {
			optIn = ", opt-in: --scenarios " + s.ID
		}
		fmt.Fprintf(stdout, "%s  (%s, boundary %s%s)\n", s.ID, s.Suite, s.Boundary, optIn)
		for j, l := range wrap("fault points: "+fp, scenariosWidth-4) {
			if j > 0 {
				l = "  " + l
			}
			fmt.Fprintf(stdout, "    %s\n", l)
		}
		for _, l := range wrap(s.Description, scenariosWidth-4) {
			fmt.Fprintf(stdout, "    %s\n", l)
		}
	}
	return exitOK
}

// wrap breaks text into lines of at most width columns at spaces (a longer
// word gets a line of its own).
func wrap(text string, width int) []string {
	var lines []string
	var cur strings.Builder
	for _, w := range strings.Fields(text) {
		if cur.Len() > 0 && cur.Len()+1+len([]rune(w)) > width {
			lines = append(lines, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteByte(' ')
		}
		cur.WriteString(w)
	}
	if cur.Len() > 0 {
		lines = append(lines, cur.String())
	}
	return lines
}
