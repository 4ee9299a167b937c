package rollbackflow

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/ripcord/ripcord/eligibility"
	"github.com/ripcord/ripcord/records"
	"github.com/ripcord/ripcord/repoconfig"
	"github.com/ripcord/ripcord/rollbackpr"
)

// Start is a request to roll an environment back, whichever way it came in.
type Start struct {
	App         string `json:"app"`
	Environment string `json:"environment"`
	// Cluster defaults to the environment's cluster in .github/ripcord.yml.
	Cluster string `json:"cluster,omitempty"`
	// To names the target: a release id or a digest ("sha256:…"). Empty
	// means the newest eligible release before the current one.
	To     string `json:"to,omitempty"`
	Reason string `json:"reason,omitempty"`
	// RequestedBy says who asked and how, for the reason and the audit.
	RequestedBy string `json:"requested_by,omitempty"`
	// Of, when set, is the release the person asked to roll back (the
	// Roll back button of its check run). The rollback is refused unless
	// that release is still the one running: a button drawn on an older
	// release would otherwise roll back a newer one, possibly to the very
	// release the person wanted gone.
	Of string `json:"of,omitempty"`
}

// Input is everything Decide needs, loaded by the shell.
type Input struct {
	Start Start
	// Repository is the app's repository, where .github/ripcord.yml lives.
	Repository string
	Env        repoconfig.Environment
	// Cluster is Start.Cluster or, when empty, the environment's.
	Cluster string
	Window  int
	// Newest are the newest records of the app, environment and cluster
	// that ran (records.Store.NewestRan: opened ones left out), newest
	// first, more than Window so that the answer can say why an older one
	// does not count.
	Newest []records.Record
	// Named is the record Start.To names; nil when To is empty or names none.
	Named *records.Record
	// ConfigRevision is the head commit of the app repository's default
	// branch: configuration comes from there, not from the target's commit.
	ConfigRevision string
	// PublicURL is the server's base URL, for links in the pull request.
	PublicURL string
	// Attempt counts the rollbacks of the same release to the same target:
	// 0 or 1 for the first; the next when the earlier ones were withdrawn
	// (their pull requests closed without merging), so that the new one is
	// a new release with its own id, record and pull request.
	Attempt int
}

// Plan is a decided rollback: the release to open and the pull request.
type Plan struct {
	// Target is the release brought back.
	Target  string             `json:"target_release_id"`
	Record  records.Record     `json:"record"`
	Request rollbackpr.Request `json:"request"`
}

// Refused is a rollback ripcord will not start, with the reason for the user.
type Refused struct {
	Reason string
	// Open, when set, is the rollback release whose pull request is open
	// in the same app, environment and cluster: the reason this one is not
	// started (one rollback pull request at a time per environment).
	Open *records.Record
	// cause, when set, is what the refusal comes from (a *pipeline.NoApp),
	// for an API to answer it as it answers the same cause elsewhere.
	cause error
}

func (r *Refused) Error() string { return r.Reason }

func (r *Refused) Unwrap() error { return r.cause }

func refuse(format string, args ...any) error { return &Refused{Reason: fmt.Sprintf(format, args...)} }

// Decide turns a request into a rollback plan, or refuses with a reason.
func Decide(in Input) (Plan, error) {
	s := in.Start
	if in.Env.Rollback.Mode != repoconfig.ModePullRequest {
		mode := in.Env.Rollback.Mode
		if mode == "" {
			mode = "none"
		}
		return Plan{}, refuse("%s in %s rolls back with mode %s; ripcord starts rollbacks by hand only for mode pull-request (environments.%s.rollback.mode in .github/ripcord.yml)",
			s.App, s.Environment, mode, s.Environment)
	}
	current, ok := running(in.Newest)
	if !ok {
		return Plan{}, refuse("no release of %s in %s/%s has been deployed yet, so there is nothing to roll back", s.App, s.Environment, in.Cluster)
	}
	if s.Of != "" && s.Of != current.ReleaseID {
		return Plan{}, refuse("release %s is not the one running in %s/%s any more: %s is; roll back from %s's check run, or with `/ripcord rollback`",
			s.Of, s.Environment, current.Cluster, current.ReleaseID, current.ReleaseID)
	}
	target, evidence, err := chooseTarget(in, current)
	if err != nil {
		return Plan{}, err
	}
	if !revisionOK(target.GitRevision) {
		return Plan{}, refuse("target release %s has no git_revision (a commit sha), which the rollback pull request needs", target.ReleaseID)
	}
	rec := records.Record{
		ReleaseID: AttemptID(current.ReleaseID, target, s.Environment, in.Attempt), App: s.App, Environment: s.Environment,
		Cluster: current.Cluster, Repository: in.Repository, Kind: records.KindRollback, RollbackOf: current.ReleaseID,
		RollbackReason: reason(s), Image: target.Image, Digest: target.Digest, GitRevision: target.GitRevision,
		ConfigRevision: in.ConfigRevision,
	}
	req := rollbackpr.Request{
		Repository: or(in.Env.Rollback.Repository, in.Repository), Base: in.Env.Rollback.Base, File: in.Env.Rollback.File,
		Fields: rollbackpr.Fields(in.Env.Rollback.Fields),
		Rollback: rollbackpr.Rollback{
			App: s.App, Environment: s.Environment, Cluster: current.Cluster, ReleaseID: rec.ReleaseID,
			RollbackOf: current.ReleaseID, Reason: rec.RollbackReason, Image: target.Image, Digest: target.ResolvedDigest(),
			GitRevision: target.GitRevision, ConfigRevision: in.ConfigRevision,
			Replaced:    rollbackpr.Replaced{Image: current.Image, Digest: current.ResolvedDigest(), GitRevision: current.GitRevision},
			Eligibility: evidence, Links: links(in, current, target, rec.ReleaseID),
		},
	}
	if err := fieldsHaveValues(req); err != nil {
		return Plan{}, err
	}
	return Plan{Target: target.ReleaseID, Record: rec, Request: req}, nil
}

// running is the release the environment runs: the newest record that ran.
// An opened record (a pull request not merged yet, an earlier rollback among
// them) has not run, nor has a withdrawn one (its pull request was closed
// without merging), so it is neither current nor target.
func running(newest []records.Record) (records.Record, bool) {
	for _, r := range newest {
		if r.Ran() {
			return r, true
		}
	}
	return records.Record{}, false
}

// chooseTarget is SelectTarget's choice, or the named release with the
// eligibility check's answer (eligible or not: a named target is allowed).
func chooseTarget(in Input, current records.Record) (records.Record, rollbackpr.Eligibility, error) {
	s := in.Start
	deployed := deployedOnly(in.Newest)
	if strings.TrimSpace(s.To) == "" {
		t, ans := eligibility.SelectTarget(deployed, current.ReleaseID, in.Window)
		if !ans.Eligible {
			return records.Record{}, rollbackpr.Eligibility{}, refuse("no eligible rollback target: %s. Name one with `to <release-id>` (it will get every gate)", ans.Reason)
		}
		return t, evidenceOf(ans, in.Window), nil
	}
	t := in.Named
	switch {
	case t == nil:
		return records.Record{}, rollbackpr.Eligibility{}, refuse("no release %q of %s in %s/%s is recorded", s.To, s.App, s.Environment, current.Cluster)
	case !t.SameTarget(current):
		return records.Record{}, rollbackpr.Eligibility{}, refuse("release %s is of %s in %s/%s, not %s in %s/%s",
			t.ReleaseID, t.App, t.Environment, t.Cluster, current.App, current.Environment, current.Cluster)
	case t.ReleaseID == current.ReleaseID:
		return records.Record{}, rollbackpr.Eligibility{}, refuse("release %s is the one running now; name an earlier release", t.ReleaseID)
	}
	image := t.ResolvedDigest()
	if image == "" {
		image = t.Image
	}
	ans := eligibility.Check(deployed, eligibility.Query{App: t.App, Environment: t.Environment, Cluster: t.Cluster, Image: image}, in.Window)
	return *t, evidenceOf(ans, in.Window), nil
}

func deployedOnly(rs []records.Record) []records.Record {
	out := make([]records.Record, 0, len(rs))
	for _, r := range rs {
		if r.Ran() {
			out = append(out, r)
		}
	}
	return out
}

func evidenceOf(ans eligibility.Answer, window int) rollbackpr.Eligibility {
	e := rollbackpr.Eligibility{Eligible: ans.Eligible, Reason: ans.Reason, Window: max(window, 1)}
	if window <= 0 {
		e.Window = eligibility.DefaultWindow
	}
	if ans.Eligible && ans.Evidence != nil {
		e.ReleaseID = ans.Evidence.ReleaseID
		if ans.Evidence.HealthyAt != nil {
			e.HealthyAt = *ans.Evidence.HealthyAt
		}
	}
	return e
}

// ReleaseID is the rollback release's id: rollback-<sha8>-<h6>:<cluster>/<env>,
// where h6 is derived from the release replaced and the target, shortened
// to records.MaxIDLen (rollbackpr.Shorten) when the cluster and environment
// are long, so that the id fits where ids are capped (the facts that echo
// it, the rollback_of of a rollback of it). The same
// rollback asked for twice (a second click, a retried job) gets the same id,
// and so the same record; rolling the same target back in again later, over
// another release, gets a new one.
func ReleaseID(rollbackOf string, target records.Record, env string) string {
	return AttemptID(rollbackOf, target, env, 1)
}

// AttemptID is ReleaseID of the attempt-th rollback of rollbackOf to
// target: the first is ReleaseID; a later one, made after the earlier ones
// were withdrawn, also hashes its number.
func AttemptID(rollbackOf string, target records.Record, env string, attempt int) string {
	key := rollbackOf + "\x00" + target.ReleaseID
	if attempt > 1 {
		key += "\x00" + strconv.Itoa(attempt)
	}
	h := sha256.Sum256([]byte(key))
	return rollbackpr.Shorten(fmt.Sprintf("rollback-%s-%s:%s/%s", rollbackpr.ShortSHA(target.GitRevision), hex.EncodeToString(h[:3]),
		target.Cluster, env), records.MaxIDLen)
}

func reason(s Start) string {
	if r := strings.TrimSpace(s.Reason); r != "" {
		return r
	}
	if s.RequestedBy != "" {
		return "requested by " + s.RequestedBy + " without a reason"
	}
	return "no reason given"
}

func revisionOK(rev string) bool {
	if len(rev) < 8 || len(rev) > 64 {
		return false
	}
	for _, c := range rev {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}

// fieldsHaveValues refuses at once what rollbackpr.Open would refuse in the
// job, where no one would read it: a configured field with no value.
func fieldsHaveValues(req rollbackpr.Request) error {
	r := req.Rollback
	for _, f := range []struct{ name, path, value string }{
		{"image", req.Fields.Image, r.Image}, {"digest", req.Fields.Digest, r.Digest}, {"release_id", req.Fields.ReleaseID, r.ReleaseID},
	} {
		if f.path != "" && strings.TrimSpace(f.value) == "" {
			return refuse("rollback.fields.%s names %q in the release file, but target release has no %s", f.name, f.path, f.name)
		}
	}
	if req.File == "" {
		return refuse("rollback.file is not set for %s in %s; ripcord needs the release file's path", r.App, r.Environment)
	}
	return nil
}

func links(in Input, current, target records.Record, id string) []rollbackpr.Link {
	var out []rollbackpr.Link
	if in.PublicURL != "" {
		base := strings.TrimSuffix(in.PublicURL, "/") + "/api/v1/releases/"
		out = append(out, rollbackpr.Link{Text: "rollback release " + id, URL: base + url.PathEscape(id)},
			rollbackpr.Link{Text: "replaced release " + current.ReleaseID, URL: base + url.PathEscape(current.ReleaseID)})
	}
	if current.PRURL != "" {
		out = append(out, rollbackpr.Link{Text: "pull request of the replaced release", URL: current.PRURL})
	}
	if target.PRURL != "" {
		out = append(out, rollbackpr.Link{Text: "pull request of the target release", URL: target.PRURL})
	}
	return out
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ParseArgs reads `/ripcord rollback [to <release-id|digest>] [reason…]`.
func ParseArgs(args []string) (to, reason string) {
	if len(args) >= 2 && strings.EqualFold(args[0], "to") {
		return args[1], strings.Join(args[2:], " ")
	}
	return "", strings.Join(args, " ")
}
