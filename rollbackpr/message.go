package rollbackpr

import (
	"strings"
)

// The git trailers every rollback commit carries; `git interpret-trailers --parse` reads
// them back. They describe the commit; nothing trusts them for a gate decision.
const (
	TrailerKind       = "Ripcord-Release-Kind"
	TrailerRollbackOf = "Ripcord-Rollback-Of"
	TrailerReason     = "Ripcord-Rollback-Reason"

	// KindRollback is the value of TrailerKind.
	KindRollback = "rollback"
)

// noReason stands in for an empty reason: a rollback must not be blocked for want of one,
// and an empty trailer value would read as a malformed trailer.
const noReason = "no reason given"

// CommitMessage is the rollback commit's message: the title as subject, a paragraph that
// says what is replaced by what, and the trailers as the last paragraph. The reason is
// folded to one line so it stays one trailer.
func CommitMessage(r Rollback) string {
	var b strings.Builder
	b.WriteString(Title(r.App, r.Environment, r.GitRevision))
	b.WriteString("\n\n")
	b.WriteString("Roll " + oneLine(r.App) + " back in " + oneLine(r.Environment))
	if r.Cluster != "" {
		b.WriteString(" (cluster " + oneLine(r.Cluster) + ")")
	}
	b.WriteString(". Rollback release " + oneLine(r.ReleaseID) + " replaces release " + oneLine(r.RollbackOf))
	b.WriteString(" and brings back " + imageRef(r.Image, r.Digest))
	b.WriteString(" built from " + oneLine(r.GitRevision) + ".\n\n")
	for _, t := range commitTrailers(r) {
		b.WriteString(t[0] + ": " + t[1] + "\n")
	}
	return b.String()
}

// commitTrailers lists the trailers in the order they are written.
func commitTrailers(r Rollback) [][2]string {
	return [][2]string{
		{TrailerKind, KindRollback},
		{TrailerRollbackOf, oneLine(r.RollbackOf)},
		{TrailerReason, reasonLine(r.Reason)},
	}
}

func reasonLine(reason string) string {
	if r := oneLine(reason); r != "" {
		return r
	}
	return noReason
}

// ParseTrailers reads "Key: value" trailers from the last paragraph of a commit message,
// as git does for the messages CommitMessage writes. It returns nil when the last
// paragraph is not all trailers.
func ParseTrailers(message string) map[string]string {
	message = strings.ReplaceAll(message, "\r\n", "\n")
	paragraphs := strings.Split(strings.TrimRight(message, "\n"), "\n\n")
	if len(paragraphs) < 2 {
		return nil // a subject alone has no trailers
	}
	out := map[string]string{}
	for _, line := range strings.Split(paragraphs[len(paragraphs)-1], "\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok || key == "" || strings.ContainsAny(key, " \t") {
			return nil
		}
		out[key] = strings.TrimSpace(value)
	}
	return out
}

// sameTrailers reports whether message carries exactly the rollback trailers r would get.
func sameTrailers(message string, r Rollback) bool {
	got := ParseTrailers(message)
	for _, t := range commitTrailers(r) {
		if got[t[0]] != t[1] {
			return false
		}
	}
	return true
}

func imageRef(image, digest string) string {
	switch {
	case image == "" && digest == "":
		return "the target image"
	case digest == "":
		return oneLine(image)
	case image == "":
		return oneLine(digest)
	case strings.HasSuffix(image, "@"+digest):
		return oneLine(image) // the image pins the digest already
	default:
		return oneLine(image) + "@" + oneLine(digest)
	}
}
