package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// setUsage makes fs print its flags as they are typed: `--name ARG`, and
// a bare `--name` for a switch. The flag package's own listing shows one
// dash and takes the first back-quoted word of a help text for the
// argument's name, which made `--console` (a switch) read `-console trl
// console`. synopsis is the command's usage line.
func setUsage(fs *flag.FlagSet, synopsis string) {
	fs.Usage = func() { printUsage(fs.Output(), fs, synopsis) }
}

func printUsage(w io.Writer, fs *flag.FlagSet, synopsis string) {
	fmt.Fprintf(w, "usage: %s\n\nflags:\n", synopsis)
	fs.VisitAll(func(f *flag.Flag) {
		fmt.Fprintf(w, "  %s\n", flagSyntax(fs.Name(), f))
		help := f.Usage
		if def := flagDefault(f); def != "" {
			help += " (default " + def + ")"
		}
		fmt.Fprintf(w, "        %s\n", help)
	})
}

// flagSyntax is how f is written on the command line: `--name` for a
// switch, `--name ARG` otherwise, ARG named after the value's type.
func flagSyntax(cmd string, f *flag.Flag) string {
	if isSwitch(f) {
		return "--" + f.Name
	}
	return "--" + f.Name + " " + argName(cmd, f)
}

// isSwitch reports a boolean flag: given alone, it means true.
func isSwitch(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// argName names f's argument: as argNames says, else by its type. The
// flag package's UnquoteUsage is not used: it reads back-quoted words of
// the help text as the name.
func argName(cmd string, f *flag.Flag) string {
	if name := argNames[cmd+" --"+f.Name]; name != "" {
		return name
	}
	if name := argNames[f.Name]; name != "" {
		return name
	}
	switch fmt.Sprintf("%T", f.Value) {
	case "*flag.durationValue", "*main.durationOrSeconds":
		return "DURATION"
	case "*flag.intValue", "*flag.int64Value", "*flag.uintValue", "*flag.uint64Value":
		return "N"
	case "*flag.float64Value":
		return "X"
	}
	return "VALUE"
}

// argNames are the flags' argument names where the type's (VALUE, N, X)
// says less; "trl call --http" names one command's flag. The README's
// command-line summary uses the same names.
var argNames = map[string]string{
	"trl call --http":    "URL",
	"trl console --http": "URL",
	"socket":             "PATH",
	"instance":           "NAME",
	"http":               "ADDR",
	"metrics":            "ADDR",
	"log-level":          "LEVEL",
	"audit-log":          "FILE",
	"record":             "DIR",
	"isolate-homes":      "DIR",
	"uid-range":          "FIRST-LAST",
	"only":               "GROUPS",
	"policy":             "FILE",
	"fs-root":            "DIR",
	"session-memory":     "MIB",
	"session-cpu":        "CPUS",
}

// flagDefault is f's default as help shows it, or "" for a zero value.
func flagDefault(f *flag.Flag) string {
	switch f.DefValue {
	case "", "0", "false", "0s":
		return ""
	}
	if fmt.Sprintf("%T", f.Value) == "*flag.stringValue" {
		return fmt.Sprintf("%q", f.DefValue)
	}
	return f.DefValue
}

// parseFlags parses args into fs. When it returns false the command ends
// with code: 0 after --help, whose usage was asked for and goes to
// stdout (`trl serve --help | grep record`); 2 after a mistake, said on
// stderr with the usage.
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	var said bytes.Buffer
	fs.SetOutput(&said)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		stdout.Write(said.Bytes())
		return 0, false
	default:
		stderr.Write(said.Bytes())
		return 2, false
	}
}

// noArgs refuses the arguments left after a command's flags, which it
// would otherwise ignore (`trl serve nu1` served the default socket).
// It says what was not understood on stderr and returns false.
func noArgs(fs *flag.FlagSet, stderr io.Writer) bool {
	if fs.NArg() == 0 {
		return true
	}
	arg := fs.Arg(0)
	fmt.Fprintf(stderr, "%s: unexpected argument %q: this command takes only flags", fs.Name(), arg)
	if fs.Lookup("instance") != nil && !strings.HasPrefix(arg, "-") && !strings.ContainsAny(arg, "/ ") {
		fmt.Fprintf(stderr, " (to name an instance, give --instance %s)", arg)
	}
	fmt.Fprintf(stderr, "; run `%s --help` for them\n", fs.Name())
	return false
}

// parseCommand parses a command that takes flags only: it refuses
// arguments and the values checks refuse. ok false means exit with code
// (0 after --help).
func parseCommand(fs *flag.FlagSet, args []string, stdout, stderr io.Writer, checks ...func() error) (code int, ok bool) {
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code, false
	}
	if !noArgs(fs, stderr) {
		return 2, false
	}
	var errs []error
	for _, check := range checks {
		errs = append(errs, check())
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return 2, false
	}
	return 0, true
}
