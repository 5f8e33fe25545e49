package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
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

// argName names f's argument by its type. The flag package's UnquoteUsage
// is not used: it reads back-quoted words of the help text as the name.
func argName(cmd string, f *flag.Flag) string {
	switch fmt.Sprintf("%T", f.Value) {
	case "*flag.durationValue":
		return "DURATION"
	case "*flag.intValue", "*flag.int64Value", "*flag.uintValue", "*flag.uint64Value":
		return "N"
	case "*flag.float64Value":
		return "X"
	}
	if name := argNames[cmd+" --"+f.Name]; name != "" {
		return name
	}
	if name := argNames[f.Name]; name != "" {
		return name
	}
	return "VALUE"
}

// argNames are the string flags' argument names, where VALUE says less;
// "trl call --http" names one command's flag.
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

// parseExit is a command's exit status when its flags did not parse: 0
// for --help (the usage was asked for and printed), 2 for a mistake.
func parseExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}
