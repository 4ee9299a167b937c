package rollbackpr

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// BranchPrefix starts every rollback branch. Gate workflows match "release-" branches, so
// a rollback gets the same checks as any release (seed 003, Phase 4 item 3).
const BranchPrefix = "release-rollback-"

// TitlePrefix starts every rollback pull request's title.
const TitlePrefix = "Rollback:"

// Label is put on every rollback pull request.
const Label = "ripcord:rollback"

// BranchName is the branch for rolling env back to gitRevision:
// release-rollback-<env>-<sha8>. The environment is folded into one valid git ref
// component (letters, digits, "-", "_", single "."; anything else becomes "-"), so the
// name always passes `git check-ref-format --branch`, and cut when it is too long for git
// to store (envComponent); the same inputs always give the same name, which is what makes
// a second start find the first one's branch.
func BranchName(env, gitRevision string) string {
	// The revision part keeps no "." so the name can never end in ".lock".
	return BranchPrefix + envComponent(env) + "-" + refComponent(strings.ReplaceAll(ShortSHA(gitRevision), ".", "-"))
}

// envMax is the longest environment part of a branch name. git keeps a branch as one
// file, and its lock file as that name with ".lock": a name over 250 bytes is refused
// ("File name too long"). The prefix, "-<sha8>" and OwnBranchName's "-of-<hash8>" take
// the rest.
const envMax = 250 - len(BranchPrefix) - len("-12345678") - len("-of-12345678")

// envComponent is refComponent(env), cut to envMax for an environment named at length:
// the first characters, "-" and eight hex digits of the SHA-256 of env, so that two long
// names that differ only past the cut still get branches of their own.
func envComponent(env string) string { return shorten(refComponent(env), env, envMax) }

// Shorten bounds a name ripcord builds from parts of any length (a rollback
// release's id, from its cluster and environment) as a long environment's
// branch name is bounded: s itself when it is at most max bytes, otherwise
// its first bytes, "-" and the first eight hex digits of the SHA-256 of s,
// max bytes in all. The start keeps it readable, the hash keeps two names
// that differ only past the cut apart, and the same s always gives the same
// name. Bytes bound characters too; the cut falls between characters.
func Shorten(s string, max int) string { return shorten(s, s, max) }

// shorten is Shorten with the hash taken of full, the name s was made from
// (an environment whose branch component is s).
func shorten(s, full string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max - len("-12345678")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	sum := sha256.Sum256([]byte(full))
	return strings.TrimRight(s[:n], ".-") + "-" + hex.EncodeToString(sum[:4])
}

// OwnBranchName is the branch for rolling env back to gitRevision when another rollback
// to the same revision (of another release) holds BranchName's branch with its pull
// request open: BranchName with "-of-" and the first eight hex digits of the SHA-256 of
// rollbackOf, the release rolled back, appended. It depends only on the rollback, so a
// retry finds it as it finds BranchName.
func OwnBranchName(env, gitRevision, rollbackOf string) string {
	sum := sha256.Sum256([]byte(rollbackOf))
	return BranchName(env, gitRevision) + "-of-" + hex.EncodeToString(sum[:4])
}

// BranchTarget is the target's short revision that branch, a rollback branch of env
// (BranchName or OwnBranchName), names; ok is false when branch is not one. The branch
// name is fixed when the pull request is opened, unlike its title, which people may edit.
func BranchTarget(branch, env string) (sha8 string, ok bool) {
	rest, ok := strings.CutPrefix(branch, BranchPrefix+envComponent(env)+"-")
	if !ok {
		return "", false
	}
	if i := strings.LastIndex(rest, "-of-"); i >= 0 && shortHex.MatchString(rest[i+len("-of-"):]) {
		rest = rest[:i]
	}
	if !shortHex.MatchString(rest) {
		return "", false
	}
	return rest, true
}

// shortHex is a ShortSHA of a commit sha: eight lower-case hex digits.
var shortHex = regexp.MustCompile(`^[0-9a-f]{8}$`)

// TitleMax is the longest pull request title GitHub takes, in characters: a longer one is
// refused with a 422 ("title is too long"), which no retry of the job would get past.
const TitleMax = 256

// Title is the pull request title and the commit subject: "Rollback: <app> <env> to <sha8>".
// It is at most TitleMax characters: an app and environment too long for that are cut,
// each ending in "…", the longer one first, so the title still starts "Rollback:" and still
// ends with the target's revision.
func Title(app, env, sha8 string) string {
	app, env = oneLine(app), oneLine(env)
	fixed := fmt.Sprintf("%s   to %s", TitlePrefix, ShortSHA(sha8))
	app, env = fitPair(app, env, TitleMax-utf8.RuneCountInString(fixed))
	return fmt.Sprintf("%s %s %s to %s", TitlePrefix, app, env, ShortSHA(sha8))
}

// fitPair cuts a and b so that together they are at most budget characters: each keeps
// at least half the budget, and the shorter one's unused share goes to the longer one.
func fitPair(a, b string, budget int) (string, string) {
	na, nb := utf8.RuneCountInString(a), utf8.RuneCountInString(b)
	if na+nb <= budget {
		return a, b
	}
	half := budget / 2
	switch {
	case na <= half:
		return a, cut(b, budget-na)
	case nb <= budget-half:
		return cut(a, budget-nb), b
	default:
		return cut(a, half), cut(b, budget-half)
	}
}

// cut shortens s to n characters, the last of them "…", when it is longer.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n < 1 {
		return ""
	}
	return strings.TrimRightFunc(string(r[:n-1]), unicode.IsSpace) + "…"
}

// ShortSHA is the first eight characters of a git revision, lower-cased.
func ShortSHA(gitRevision string) string {
	rev := strings.ToLower(strings.TrimSpace(gitRevision))
	if len(rev) > 8 {
		return rev[:8]
	}
	return rev
}

// refComponent keeps ASCII letters, digits, "_", "-" and lone "."; every other run of
// characters becomes one "-". Leading and trailing "." and "-" are dropped, which also
// rules out "..", ".lock" endings, "@{" and the characters git forbids (space ~ ^ : ? * [ \).
func refComponent(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		case r == '.':
			if !strings.HasSuffix(b.String(), ".") && !strings.HasSuffix(b.String(), "-") {
				b.WriteRune(r)
			}
		default:
			out := strings.TrimSuffix(b.String(), ".")
			if !strings.HasSuffix(out, "-") {
				out += "-"
			}
			b.Reset()
			b.WriteString(out)
		}
	}
	out := strings.Trim(b.String(), ".-")
	if out == "" {
		return "x"
	}
	return out
}
