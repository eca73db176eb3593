package main

import (
	"context"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/orderflow-audit/orderflow-audit/runner"
)

func cmdScenarios(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("scenarios", "scenarios",
		"Lists the scenarios that 'run' knows, in run order: id, suite, boundary, fault points and what each does.",
		"orderflow-audit scenarios")
	if code, ok := fs.parse(args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return fail(stderr, "scenarios", usageErrorf("unexpected argument %q", fs.Arg(0)))
	}
	t := tablewriter.NewTable(stdout,
		tablewriter.WithRenderer(renderer.NewMarkdown()),
		tablewriter.WithHeaderAutoFormat(tw.Off),
	)
	t.Header("id", "suite", "boundary", "fault points", "description")
	for _, s := range runner.Scenarios() {
		fp := strings.Join(s.FaultPoints(), ", ")
		if fp == "" {
			fp = "-"
		}
		if err := t.Append(s.ID, s.Suite, s.Boundary, fp, s.Description); err != nil {
			return fail(stderr, "scenarios", err)
		}
	}
	if err := t.Render(); err != nil {
		return fail(stderr, "scenarios", err)
	}
	return exitOK
}
