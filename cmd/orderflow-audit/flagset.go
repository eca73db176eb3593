package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/orderflow-audit/orderflow-audit/internal/didyoumean"
)

// flagSet is a subcommand's flag.FlagSet with its help text. Flags and
// positional arguments may be interleaved ("verify FILE --json"); "--" ends
// the flags.
type flagSet struct {
	*flag.FlagSet
	synopsis string // e.g. "verify [flags] EVIDENCE"
	about    string // what the command does, one paragraph
	example  string // one or more example command lines
	pos      []string
}

// newFlagSet returns a ContinueOnError flag set writing its messages to
// stderr (set by parse).
func newFlagSet(name, synopsis, about, example string) *flagSet {
	fs := flag.NewFlagSet(progName+" "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := &flagSet{FlagSet: fs, synopsis: synopsis, about: about, example: example}
	fs.Usage = func() {} // parse prints usage itself
	made.Lock()
	made.sets[name] = f
	made.Unlock()
	return f
}

// made holds the last flag set made for each command, for the generated
// parts of docs/cli.md (clidoc.go).
var made = struct {
	sync.Mutex
	sets map[string]*flagSet
}{sets: map[string]*flagSet{}}

// printUsage writes the synopsis, the description, the flags and the
// example.
func (f *flagSet) printUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage:\n  %s %s\n\n", progName, f.synopsis)
	if f.about != "" {
		// The first paragraph; the rest is in docs/cli.md (clidoc.go).
		first, _, _ := strings.Cut(strings.TrimSpace(f.about), "\n\n")
		fmt.Fprintf(w, "%s\n\n", first)
	}
	hasFlags := false
	f.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprintln(w, "Flags:")
		f.printFlags(w)
		fmt.Fprintln(w)
	}
	if f.example != "" {
		fmt.Fprintln(w, "Examples:")
		for _, l := range strings.Split(strings.TrimSpace(f.example), "\n") {
			fmt.Fprintf(w, "  %s\n", strings.TrimSpace(l))
		}
	}
	if name := strings.TrimPrefix(f.Name(), progName+" "); name != "actor" && !strings.Contains(name, " ") {
		fmt.Fprintf(w, "\nEvery flag and what the command does in detail: docs/cli.md#%s\n", name)
	}
}

// printFlags lists the flags GNU-style ("--name value", "-o value" for a
// one-letter name); both "-name" and "--name" are accepted by the flag
// package. Defaults are quoted only when they are strings.
func (f *flagSet) printFlags(w io.Writer) {
	const col, width = 26, 100 // the usage column and the line's width
	f.VisitAll(func(fl *flag.Flag) {
		name, usage := flag.UnquoteUsage(fl)
		name = placeholder(name)
		head := "  --" + fl.Name
		if len(fl.Name) == 1 {
			head = "  -" + fl.Name
		}
		if name != "" {
			head += " " + name
		}
		if fl.DefValue != "" && fl.DefValue != "false" && fl.DefValue != "0" && fl.DefValue != "0s" && fl.DefValue != "[]" {
			usage += " (default " + fl.DefValue + ")"
		}
		// A comma-separated list wraps after its commas.
		usage = strings.ReplaceAll(usage, ",", ", ")
		usage = strings.ReplaceAll(usage, ",  ", ", ")
		lines := wrap(usage, width-col)
		if len(head) >= col-1 {
			fmt.Fprintln(w, head)
		} else {
			fmt.Fprintf(w, "%-*s", col, head)
			fmt.Fprintln(w, lines[0])
			lines = lines[1:]
		}
		for _, l := range lines {
			fmt.Fprintf(w, "%s%s\n", strings.Repeat(" ", col), l)
		}
	})
}

// placeholder is the one spelling of a flag's value in every -h and in
// docs/cli.md: upper case, N for a number, D for a duration.
func placeholder(name string) string {
	switch name {
	case "int", "uint", "int64", "uint64":
		return "N"
	case "duration":
		return "D"
	case "float":
		return "X"
	case "string", "value":
		return "VALUE"
	}
	return strings.ToUpper(name)
}

// parse parses args. On -h/--help it prints the usage to stdout and returns
// (exitOK, false); on a bad flag it prints the problem and where the usage
// is to stderr and returns (exitUsage, false). ok means: go on.
func (f *flagSet) parse(args []string, stdout, stderr io.Writer) (code int, ok bool) {
	f.pos = nil
	for {
		err := f.FlagSet.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			f.printUsage(stdout)
			return exitOK, false
		}
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v%s\nRun '%s -h' for usage.\n", f.Name(), err, f.flagHint(err), f.Name())
			return exitUsage, false
		}
		rest := f.FlagSet.Args()
		if len(rest) == 0 {
			return exitOK, true
		}
		if i := len(args) - len(rest); i > 0 && args[i-1] == "--" {
			f.pos = append(f.pos, rest...)
			return exitOK, true
		}
		f.pos = append(f.pos, rest[0])
		args = rest[1:]
	}
}

// flagHint suggests the flag meant by an unknown one ("flag provided but
// not defined: -scenario").
func (f *flagSet) flagHint(err error) string {
	const undefined = "flag provided but not defined: -"
	msg := err.Error()
	if !strings.HasPrefix(msg, undefined) {
		return ""
	}
	var names []string
	f.VisitAll(func(fl *flag.Flag) { names = append(names, fl.Name) })
	if s := didyoumean.Suggest(strings.TrimPrefix(msg, undefined), names); s != "" {
		return " (did you mean --" + s + "?)"
	}
	return ""
}

// Args returns the positional arguments after parse.
func (f *flagSet) Args() []string { return f.pos }

// NArg returns the number of positional arguments after parse.
func (f *flagSet) NArg() int { return len(f.pos) }

// Arg returns the i'th positional argument, or "".
func (f *flagSet) Arg(i int) string {
	if i < 0 || i >= len(f.pos) {
		return ""
	}
	return f.pos[i]
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
