package recoveryflow

import (
	"fmt"
	"strings"
	"time"

	"github.com/ripcord/ripcord/recovery"
)

// CheckName is the check run that shows a recovery episode.
const CheckName = "ripcord/recovery"

// CheckView is what the ripcord/recovery check run says.
type CheckView struct {
	Status     string // in_progress or completed
	Conclusion string // when completed: success, neutral or failure
	Title      string
	Summary    string
}

// RenderCheck shows an episode: the decision, its reason, the attempt, the
// next retry and the config that applied. A retry or a rollback in flight
// is in_progress; an episode that needs nothing more from ripcord is
// completed. A rollback stays in progress until it ends: GitHub may refuse
// to change a completed check run, and a rollback that then fails would
// still show as a neutral "Rolling back".
func RenderCheck(ep Episode) CheckView {
	d := ep.Decision
	v := CheckView{Status: "completed"}
	switch ep.State {
	case StateRetryScheduled:
		v.Status, v.Title = "in_progress", fmt.Sprintf("Retry %d of %d at %s", d.Attempt, d.MaxAttempts, stamp(d.RetryAt))
	case StateRetrying:
		v.Status, v.Title = "in_progress", fmt.Sprintf("Re-running the failed jobs (retry %d of %d)", d.Attempt, d.MaxAttempts)
		if n := ep.Context.RerunByHand; n > 0 {
			v.Title = fmt.Sprintf("Waiting for the re-run a person started (attempt %d)", n)
		}
	case StateRecovered:
		v.Conclusion, v.Title = "success", fmt.Sprintf("Recovered: attempt %d succeeded", ep.RunAttempt)
	case StateRollingBack:
		v.Status, v.Title = "in_progress", "Rolling back to "+targetName(d.Target)
		if _, ok := ep.limitWait(kindDispatch); ok {
			v.Title += ": waiting for GitHub's rate limit"
		}
	case StateRolledBack:
		v.Conclusion, v.Title = "neutral", "Rolled back to "+targetName(d.Target)
	case StateStopped:
		v.Conclusion, v.Title = "neutral", fmt.Sprintf("Stopped: attempt %d did not finish", ep.RunAttempt)
	case StateSkipped:
		v.Conclusion, v.Title = "neutral", "Rollback skipped: another version is running"
		if d.Rule == RuleSkipRollbackUnderWay {
			v.Title = "Rollback skipped: this release is being rolled back already"
		}
	default:
		v.Conclusion, v.Title = "failure", "Manual intervention required"
	}
	v.Summary = summary(ep)
	return v
}

func summary(ep Episode) string {
	d, c := ep.Decision, ep.Context
	var b strings.Builder
	fmt.Fprintf(&b, "**Decision:** %s (rule `%s`)\n\n**Why:** %s\n\n", d.Action, d.Rule, d.Reason)
	if _, ok := ep.limitWait(kindDispatch); ok {
		fmt.Fprintf(&b, "**Now:** %s This check run completes when the rollback ends.\n\n", limitNotice(ep))
	} else if ep.State == StateRollingBack {
		fmt.Fprintf(&b, "**Now:** a rollback to %s is running; this check run completes when it ends.\n\n", targetName(d.Target))
	}
	if c.Note != "" {
		fmt.Fprintf(&b, "**Note:** %s\n\n", c.Note)
	}
	fmt.Fprintf(&b, "| | |\n|---|---|\n")
	row := func(k, v string) { fmt.Fprintf(&b, "| %s | %s |\n", k, v) }
	row("state", string(ep.State))
	row("run", fmt.Sprintf("%d, attempt %d (%s)", ep.RunID, ep.RunAttempt, c.Conclusion))
	row("attempt", fmt.Sprintf("%d of %d", d.Attempt, d.MaxAttempts))
	if ep.NextRetryAt != nil {
		row("next retry", stamp(*ep.NextRetryAt))
	}
	row("failure type", fmt.Sprintf("%s (from %s)", orDash(c.Input.FailureType), c.FailureTypeSource))
	row("app / environment", fmt.Sprintf("%s / %s", ep.App, where(ep.Environment, ep.Cluster)))
	row("failed release", releaseCell(ep.ReleaseID, c.Input.FailedVersion))
	row("running", releaseCell(c.LiveReleaseID, c.Input.Live.Version))
	if p := c.Input.Previous; p != nil {
		row("previous release", releaseCell(p.ReleaseID, p.Version)+eligible(p))
	}
	switch {
	case ep.RollbackRunID > 0:
		row("rollback run", fmt.Sprintf("%d", ep.RollbackRunID))
	case ep.RollbackRunID < 0 && ep.State == StateRollingBack:
		row("rollback run", "dispatched, not known yet")
	}
	fmt.Fprintf(&b, "\n**Config applied** (`%s`): %s", c.Config.Source, policy(c.Config.Policy))
	mode := c.Config.RollbackMode
	if mode == "" {
		mode = "none"
	}
	fmt.Fprintf(&b, ", rollback mode %s, eligibility window %d.\n", mode, c.Config.Window)
	return b.String()
}

func policy(p recovery.Policy) string {
	return fmt.Sprintf("max_retries %d, initial_backoff %s, multiplier %g, max_backoff %s", p.MaxRetries, p.InitialBackoff, p.Multiplier, p.MaxBackoff)
}

func eligible(t *recovery.Target) string {
	if t.Eligible {
		return ", eligible"
	}
	return ", not eligible"
}

func releaseCell(id, version string) string {
	switch {
	case id == "" && version == "":
		return "unknown"
	case id == "":
		return "`" + version + "`"
	case version == "":
		return id
	}
	return fmt.Sprintf("`%s` (%s)", version, id)
}

func targetName(t *recovery.Target) string {
	if t == nil {
		return "the previous release"
	}
	if t.Version != "" {
		return t.Version
	}
	return t.ReleaseID
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
