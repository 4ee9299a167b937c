package rollbackpr

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ripcord/ripcord/internal/mdtext"
)

// BodyMax is the longest pull request description GitHub takes (65536 characters; counted
// here in bytes, which are never fewer): a longer one is refused with a 422 ("body is too
// long") on every attempt.
const BodyMax = 65536

// reasonCut ends a reason Body had to cut.
const reasonCut = "… (cut to fit GitHub's limit on a pull request description: the rollback commit's " + TrailerReason + " trailer has it whole)"

// Body is the pull request description in markdown: what is replaced by what, why, the
// eligibility evidence (or that the target is not eligible and gets every gate), and
// links. Reviewers read it; gates do not trust it. A reason too long for BodyMax is cut
// and says where to read it whole.
func Body(r Rollback) string {
	reason := oneLine(reasonLine(r.Reason))
	out := body(r, reason)
	over := len(out) - BodyMax
	if over <= 0 {
		return out
	}
	// The reason is shown inert (body), whose fence depends on the text
	// kept: cut again until the whole fits.
	keep := len(reason)
	for {
		keep = max(keep-over-len(reasonCut), 0)
		for keep > 0 && !utf8.RuneStart(reason[keep]) {
			keep--
		}
		out = body(r, strings.TrimRightFunc(reason[:keep], unicode.IsSpace)+reasonCut)
		if over = len(out) - BodyMax; over <= 0 || keep == 0 {
			return out
		}
		keep += len(reasonCut)
	}
}

func body(r Rollback, reason string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Rollback of %s in %s\n\n", oneLine(r.App), oneLine(r.Environment))
	fmt.Fprintf(&b, "This pull request rolls **%s** back in **%s**", oneLine(r.App), oneLine(r.Environment))
	if r.Cluster != "" {
		fmt.Fprintf(&b, " (cluster %s)", code(r.Cluster))
	}
	fmt.Fprintf(&b, ". It is a new release, %s, of kind `%s`, replacing release %s.\n\n", code(r.ReleaseID), KindRollback, code(r.RollbackOf))

	b.WriteString("| | replaced (running now) | rollback target |\n|---|---|---|\n")
	row(&b, "release", r.RollbackOf, r.ReleaseID)
	row(&b, "image", r.Replaced.Image, r.Image)
	row(&b, "digest", r.Replaced.Digest, r.Digest)
	row(&b, "git revision", r.Replaced.GitRevision, r.GitRevision)
	b.WriteString("\n")
	if r.ConfigRevision != "" {
		fmt.Fprintf(&b, "Configuration comes from %s; the git revision stays the target's, so provenance and commit-signature checks look at the commit that built the image.\n\n", code(r.ConfigRevision))
	}

	// The reason is quoted: a "/ripcord approve" typed into it must not read as a command.
	// And inert: a mention typed into it (@team, #12) would notify, and a link would
	// look as if ripcord vouched for it.
	fmt.Fprintf(&b, "### Why\n\n> %s\n\n", mdtext.Inert(reason))
	b.WriteString("### Eligibility\n\n")
	b.WriteString(eligibilityText(r))
	b.WriteString("\n\nGates do not trust this text: each works eligibility out again from the release records.\n")

	if len(r.Links) > 0 {
		b.WriteString("\n### Links\n\n")
		for _, l := range r.Links {
			fmt.Fprintf(&b, "- [%s](%s)\n", oneLine(l.Text), strings.ReplaceAll(oneLine(l.URL), " ", "%20"))
		}
	}
	return b.String()
}

func eligibilityText(r Rollback) string {
	e := r.Eligibility
	if !e.Eligible {
		why := oneLine(e.Reason)
		if why == "" {
			why = "no release record proves it ran healthy here"
		}
		return fmt.Sprintf("**Not eligible:** %s. The target is treated as an ordinary promotion: this pull request gets every gate, and each blocks as usual.", strings.TrimSuffix(why, "."))
	}
	var b strings.Builder
	b.WriteString("**Eligible rollback target.**")
	if e.Reason != "" {
		b.WriteString(" " + strings.TrimSuffix(oneLine(e.Reason), ".") + ".")
	}
	if e.ReleaseID != "" {
		fmt.Fprintf(&b, " Evidence: release %s", code(e.ReleaseID))
		if !e.HealthyAt.IsZero() {
			fmt.Fprintf(&b, " reached healthy at %s", e.HealthyAt.UTC().Format(time.RFC3339))
		}
		if e.Window > 0 {
			fmt.Fprintf(&b, ", one of the newest %d releases of %s in %s", e.Window, oneLine(r.App), oneLine(r.Environment))
		}
		b.WriteString(".")
	}
	b.WriteString(" Integrity gates (provenance, values, commit-signing) block as always; content gates (sast, sbom, image-scan) run, report their findings and pass; process and approval gates are unchanged.")
	return b.String()
}

func row(b *strings.Builder, name, replaced, target string) {
	fmt.Fprintf(b, "| %s | %s | %s |\n", name, cell(replaced), cell(target))
}

func cell(s string) string {
	if strings.TrimSpace(s) == "" {
		return "—"
	}
	// A "|" would end the table cell even inside a code span.
	return strings.ReplaceAll(code(s), "|", `\|`)
}

// code renders s as an inline code span on one line.
func code(s string) string {
	return "`" + strings.ReplaceAll(oneLine(s), "`", "'") + "`"
}
