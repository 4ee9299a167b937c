// Command ripcord is the one binary: the server, the cluster agent and the CLI.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ripcord/ripcord/internal/suggest"
)

type command struct {
	name, summary string
	run           func(args []string) int
}

var commands []command

func init() {
	commands = []command{
		{"serve", "run the GitHub App server (webhooks, jobs, API)", runServe},
		{"migrate", "apply database migrations and exit", runMigrate},
		{"releases", "list releases, show one, or its audit trail (list|show ID|audit ID)", runReleases},
		{"fact", "post a fact for a cluster, from a file or flags", runFact},
		{"agent", "watch a cluster's tracked workloads, post their facts, carry out rollbacks", runAgent},
		{"rollback", "roll an environment back: open a rollback pull request (--app --environment --reason [--to])", runRollback},
		{"rollout", "start a rollout in waves, show it, list an environment's, approve or abort one (start|status|list|approve|abort)", runRollout},
		{"validate", "check .github/ripcord.yml files (path:line:column: message)", runValidate},
		{"version", "print the version", runVersion},
	}
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	// `ripcord help releases list` is `ripcord releases list -h`, as
	// `go help build` or `git help commit` would have it.
	if len(args) > 1 && args[0] == "help" {
		return run(append(args[1:], "-h"))
	}
	if len(args) == 0 {
		usage(os.Stderr)
		return 2
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(os.Stdout)
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(args[1:])
		}
	}
	fmt.Fprintf(os.Stderr, "ripcord: unknown command %q%s\n", args[0], commandHint(args[0]))
	usage(os.Stderr)
	return 2
}

// commandHint says what an unknown command most likely meant: `ripcord
// --version` and `ripcord --server URL releases list` were told only that
// the flag is no command, and `ripcord rollbak` only the list of commands.
func commandHint(word string) string {
	if strings.HasPrefix(word, "-") {
		flagName, _, _ := strings.Cut(strings.TrimLeft(word, "-"), "=")
		if flagName == "version" || flagName == "v" {
			return "; the version is a command: ripcord version"
		}
		return "; a command comes first, then its flags: ripcord <command> --" + flagName + " ..."
	}
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	if best, d := suggest.Closest(word, names); suggest.Near(d, len(word)) {
		return "; did you mean ripcord " + best + "?"
	}
	return ""
}

// usage lists the commands: on stdout when it was asked for (ripcord -h,
// ripcord help), so that it can be paged or searched, and on stderr after
// a mistake.
func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: ripcord <command> [flags]\n\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'ripcord <command> -h' (or 'ripcord help <command>') for what a command does, examples and its flags.")
}

// parse parses a command's flags. stop says the command must end with code:
// 0 after -h or --help (the command's page went to stdout), 2 for a bad
// flag (the flag package has said which on stderr, with the page).
// Flags may come before or after the positional arguments
// (`ripcord releases show ID --json`); after "--" everything is positional.
func parse(fs *flag.FlagSet, args []string) (code int, stop bool) {
	// What the flag package prints while parsing is held until it is known
	// whether it is a page asked for, which goes to stdout (ripcord serve -h
	// | less), or an error and the page, which go to stderr. A flag set
	// given another output (tests) keeps it.
	if fs.Output() == io.Writer(os.Stderr) {
		var said bytes.Buffer
		fs.SetOutput(&said)
		defer func() {
			fs.SetOutput(nil) // stderr, for a usage line printed later
			w := os.Stderr
			if stop && code == 0 {
				w = os.Stdout
			}
			_, _ = w.Write(said.Bytes())
		}()
	}
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0, true
			}
			fmt.Fprintln(fs.Output(), flagMistake(fs, err))
			return 2, true
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			positional = append(positional, rest...)
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	// Leave the positional arguments as fs.Args().
	if err := fs.Parse(append([]string{"--"}, positional...)); err != nil {
		return 2, true
	}
	return 0, false
}

// flagMistake says again, after the command's page, what was wrong with
// the command line, with the flag most likely meant for an unknown one: the
// flag package's own line comes before the page, and scrolled out of sight
// with it, so `ripcord rollback --env prod` left a newcomer reading thirty
// lines of flags for the one named differently.
func flagMistake(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		msg = "unknown flag --" + name
		if s := closestFlag(fs, name); s != "" {
			msg += "; did you mean --" + s + "?"
		}
	}
	return fs.Name() + ": " + msg
}

// closestFlag is the flag of fs that name most likely meant: the only one
// it begins (--env for --environment), else the nearest by edit distance if
// near enough, with _ read as - (--release_id); "" when none is.
func closestFlag(fs *flag.FlagSet, name string) string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return suggest.Meant(strings.ReplaceAll(name, "_", "-"), names)
}

// noArgs ends a command that takes no arguments but was given one: ignored,
// it is most often a value that lost its quotes (--reason bad deploy sends
// the reason "bad") or a filter written without its flag (releases list
// checkout lists every app), and the command would act on less than asked.
// serve, migrate and agent said only "unexpected argument", which left a
// newcomer who typed `ripcord serve ripcord.db` guessing what was wrong.
func noArgs(fs *flag.FlagSet) (code int, stop bool) {
	if fs.NArg() == 0 {
		return 0, false
	}
	hint := "flags start with --, and a value with spaces needs quotes"
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if !hasFlags {
		hint = "nor flags"
	}
	fmt.Fprintf(os.Stderr, "%s: unexpected argument %q; it takes no arguments (%s)\n", fs.Name(), fs.Arg(0), hint)
	return 2, true
}

// oneArg ends a command that takes exactly one argument (what, such as
// RELEASE_ID) when it was given none or several, saying which, then its
// usage line: the usage line alone left a user to find out whether the id
// was missing, or one of two words was taken for a second argument (a
// --reason without quotes).
func oneArg(fs *flag.FlagSet, what, usage string) (code int, stop bool) {
	switch fs.NArg() {
	case 1:
		return 0, false
	case 0:
		fmt.Fprintf(os.Stderr, "%s: %s is required\n", fs.Name(), what)
	default:
		fmt.Fprintf(os.Stderr, "%s: unexpected argument %q; it takes one %s (a value with spaces needs quotes)\n", fs.Name(), fs.Arg(1), what)
	}
	fmt.Fprintln(os.Stderr, "usage: "+usage)
	return 2, true
}

// required ends a command when flags it needs are empty, naming every one
// of them at once and in the order given: one at a time, in the random
// order of a map, a user who left out two learnt of the second only at the
// next try, and not always of the same one first.
func required(command string, flags ...[2]string) (code int, stop bool) {
	var missing []string
	for _, f := range flags {
		if strings.TrimSpace(f[1]) == "" {
			missing = append(missing, "--"+f[0])
		}
	}
	switch len(missing) {
	case 0:
		return 0, false
	case 1:
		fmt.Fprintf(os.Stderr, "%s: %s is required\n", command, missing[0])
	default:
		fmt.Fprintf(os.Stderr, "%s: %s and %s are required\n", command, strings.Join(missing[:len(missing)-1], ", "), missing[len(missing)-1])
	}
	return 2, true
}

// flagRange ends a command when a whole-number flag is outside lo..hi,
// naming the flag: the server refuses such a limit too, but only after a
// request, in words that name its query parameter rather than the flag.
func flagRange(fs *flag.FlagSet, name string, lo, hi int) (code int, stop bool) {
	v := fs.Lookup(name).Value.(flag.Getter).Get().(int)
	if v >= lo && v <= hi {
		return 0, false
	}
	fmt.Fprintf(os.Stderr, "%s: --%s must be from %d to %d, not %d\n", fs.Name(), name, lo, hi, v)
	return 2, true
}

// notNegative ends a command when one of its count or duration flags is
// negative, naming the first: the agent took 0 as "the default" but used a
// negative health timeout or --min-healthy as given, and `ripcord fact`
// sent a negative generation or step for the server to refuse in words
// that name the fact's field rather than the flag.
func notNegative(fs *flag.FlagSet, names ...string) (code int, stop bool) {
	for _, name := range names {
		f := fs.Lookup(name)
		negative := false
		switch v := f.Value.(flag.Getter).Get().(type) {
		case int:
			negative = v < 0
		case int64:
			negative = v < 0
		case time.Duration:
			negative = v < 0
		default:
			panic("notNegative: --" + name + " is neither a count nor a duration")
		}
		if negative {
			fmt.Fprintf(os.Stderr, "%s: --%s must not be negative, not %s\n", fs.Name(), name, f.Value)
			return 2, true
		}
	}
	return 0, false
}

// newFlags is a command's flag set. Its -h page says how to call the
// command (synopsis: what it needs besides flags), what it does (about) and
// how it is used (examples), then lists the flags: a newcomer reads it
// before the README.
func newFlags(command, synopsis, about string, examples ...string) *flag.FlagSet {
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	fs.Usage = func() {
		writePage(fs.Output(), command+" "+synopsis, about, examples)
		fmt.Fprintln(fs.Output(), "\nflags:")
		fs.PrintDefaults()
	}
	return fs
}

// writePage writes the head of a -h page: the usage line, what the command
// does, wrapped, and its examples.
func writePage(w io.Writer, usage, about string, examples []string) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n\nexamples:\n", strings.TrimSpace(usage), wrap(about, 76))
	for _, e := range examples {
		fmt.Fprintf(w, "  %s\n", e)
	}
}

// wrap breaks text into lines of at most width characters, between words.
func wrap(text string, width int) string {
	var b strings.Builder
	line := 0
	for _, word := range strings.Fields(text) {
		switch {
		case line == 0:
		case line+1+len(word) > width:
			b.WriteByte('\n')
			line = 0
		default:
			b.WriteByte(' ')
			line++
		}
		b.WriteString(word)
		line += len(word)
	}
	return b.String()
}

// helpOut is where a command group's page goes and the code it ends with:
// asked for (args start with -h), stdout and 0; given for want of a
// subcommand, stderr and 2.
func helpOut(args []string) (io.Writer, int) {
	if len(args) == 0 {
		return os.Stderr, 2
	}
	return os.Stdout, 0
}

// isHelp reports whether arg asks for help rather than naming a subcommand.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}
