package recoveryflow

import (
	"fmt"
	"strings"

	"github.com/ripcord/ripcord/records"
)

// IssueLabel marks the issues ripcord opens for a human.
const IssueLabel = "ripcord"

// maxStoryEvents bounds the audit trail quoted in an alert issue.
const maxStoryEvents = 200

// issueMarker ends an alert issue's body with its key, so a retried job can
// find the issue an earlier attempt opened.
func issueMarker(key string) string { return "<!-- ripcord:alert " + key + " -->" }

// RenderIssue is the alert issue of an episode: a title that names the
// release and a body with the decision and the release's story, oldest event
// first, from the audit trail.
func RenderIssue(ep Episode, story []records.AuditEvent) (title, body string) {
	d := ep.Decision
	title = fmt.Sprintf("ripcord: manual intervention required for %s in %s", ep.App, where(ep.Environment, ep.Cluster))
	if ep.ReleaseID != "" {
		title += " (release " + ep.ReleaseID + ")"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ripcord stopped acting on run %d of `%s` (%s, commit %s) and needs a human.\n\n",
		ep.RunID, ep.Workflow, ep.Repository, short(ep.HeadSHA))
	fmt.Fprintf(&b, "**Why:** %s\n\n", d.Reason)
	if ep.Context.Note != "" {
		fmt.Fprintf(&b, "**Note:** %s\n\n", ep.Context.Note)
	}
	fmt.Fprintf(&b, "Rule `%s`, failure %d (max_retries %d), failure type %s.\n\n",
		d.Rule, ep.RetryCount, d.MaxAttempts, orDash(ep.Context.Input.FailureType))
	fmt.Fprintf(&b, "### Story\n\n| at | event | what happened |\n|---|---|---|\n")
	for _, e := range story {
		fmt.Fprintf(&b, "| %s | `%s` | %s |\n", stamp(e.At), e.Type, cell(e.Message))
	}
	if len(story) == 0 {
		b.WriteString("| | | no audit events are recorded |\n")
	}
	fmt.Fprintf(&b, "\nThe full trail: `GET /api/v1/audit?release_id=%s`. ripcord updates this issue if this release fails again.\n\n%s",
		ep.AlertKey(), issueMarker(ep.AlertKey()))
	return title, b.String()
}

// cell keeps a message on one table row.
func cell(s string) string {
	return strings.NewReplacer("\n", " ", "|", `\|`).Replace(s)
}

func short(sha string) string {
	if len(sha) > 8 {
		return sha[:8]
	}
	return sha
}
