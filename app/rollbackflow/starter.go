package rollbackflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/records"
)

// StartRequest is a signed-in person's request to roll back, from a door
// that knows who is asking (the releases page). The command and the button
// reach the same check and decision through their webhook handlers.
type StartRequest struct {
	App         string
	Environment string
	// Cluster defaults to the environment's cluster in .github/ripcord.yml.
	Cluster string
	// To names the target (release id or digest); empty means the newest
	// eligible release before the current one.
	To     string
	Reason string
	// User is the GitHub login of the person asking; their permission on
	// Repository decides.
	User string
	// Repository is the app's repository (owner/name), where
	// .github/ripcord.yml lives.
	Repository string
	// Via says how they asked ("the releases page"), for the audit trail and
	// the rollback's requested_by.
	Via string
	// On is the release the person asked from; the request and its answer
	// are written to its audit trail. Empty writes none.
	On string
}

// Outcome is what a request to roll back came to: refused with a reason,
// open already, or queued.
type Outcome struct {
	// Refused is why ripcord did not start the rollback; "" when it did.
	Refused string
	// Plan is the decided rollback; zero when refused.
	Plan Plan
	// Open is the rollback's release record when the same rollback was
	// opened before (PRURL links its pull request); nothing new is queued.
	Open *records.Record
	// Queued is the pull-request job, when neither refused nor open.
	Queued Queued
}

// Starter starts rollbacks for people who are signed in somewhere ripcord
// trusts to say who they are.
type Starter struct{ st *starter }

// NewStarter returns a Starter; share one, so the config loader's cache is.
func NewStarter(d pipeline.Deps) *Starter { return &Starter{st: newStarter(d)} }

// Start checks req.User's permission on req.Repository exactly as the
// command and the button do (commands.rollback in .github/ripcord.yml,
// default write, read through the App's installation client), decides with
// the same Decide, and queues the same idempotent job. A refusal is an
// Outcome with the reason, not an error; errors are failures to find out.
func (s *Starter) Start(ctx context.Context, req StartRequest) (Outcome, error) {
	out, err := s.start(ctx, req)
	var refused *Refused
	if errors.As(err, &refused) {
		out, err = Outcome{Refused: refused.Reason}, nil
	}
	if err != nil {
		return Outcome{}, fmt.Errorf("roll back %s in %s for %s: %w", req.App, req.Environment, req.User, err)
	}
	if err := s.audit(ctx, req, out); err != nil {
		return Outcome{}, err
	}
	return out, nil
}

func (s *Starter) start(ctx context.Context, req StartRequest) (Outcome, error) {
	for _, f := range []struct{ name, v string }{{"app", req.App}, {"environment", req.Environment},
		{"reason", req.Reason}, {"user", req.User}, {"repository", req.Repository}} {
		if strings.TrimSpace(f.v) == "" {
			return Outcome{}, refuse("%s is required", f.name)
		}
	}
	st, d := s.st, s.st.deps
	inst, err := installationOf(ctx, d, req.Repository)
	if err != nil {
		return Outcome{}, err
	}
	gh, err := d.GitHub.NewInstallationClient(inst)
	if err != nil {
		return Outcome{}, fmt.Errorf("github client for installation %d: %w", inst, err)
	}
	cfg, err := st.loader.Load(ctx, gh.Repositories, req.Repository, "")
	if err != nil {
		return Outcome{}, err
	}
	if !cfg.Valid() {
		return Outcome{}, refuse("%s", cfg.Explain(req.Repository))
	}
	v, err := permit(ctx, gh, cfg.Config, req.Repository, req.User)
	if err != nil {
		return Outcome{}, err
	}
	if !v.Allowed {
		return Outcome{}, refuse("%s", strings.TrimSuffix(v.Reason, "."))
	}
	b, err := st.begin(ctx, gh, cfg.Config, req.Repository, Start{App: req.App, Environment: req.Environment,
		Cluster: req.Cluster, To: req.To, Reason: req.Reason, RequestedBy: fmt.Sprintf("@%s on %s", req.User, or(req.Via, "the web"))})
	if err != nil || b.open != nil {
		return Outcome{Plan: b.plan, Open: b.open}, err
	}
	out := Outcome{Plan: b.plan}
	err = d.DB.InDurableTx(ctx, func(tx *sql.Tx) error {
		if err := st.claim(ctx, tx, b.plan, b.merged); err != nil {
			return err // another rollback of the environment came first
		}
		out.Queued, err = st.queue(ctx, tx, argsFor(b.plan, nil))
		return err
	})
	return out, err
}

// audit writes the request and its answer to the trail of the release it
// was made on, as the button does for a click.
func (s *Starter) audit(ctx context.Context, req StartRequest, out Outcome) error {
	if req.On == "" {
		return nil
	}
	typ, answer := records.AuditCommandReceived, "rollback "+out.Plan.Record.ReleaseID+" queued"
	switch {
	case out.Refused != "":
		typ, answer = records.AuditCommandRefused, "refused: "+out.Refused
	case out.Open != nil:
		answer = "rollback " + out.Open.ReleaseID + " is open already"
	}
	d, now := s.st.deps, time.Now
	if d.Now != nil {
		now = d.Now
	}
	ev := records.AuditEvent{Type: typ, ReleaseID: req.On, At: now(),
		Message: fmt.Sprintf("@%s asked on %s to roll back (%s); %s", req.User, or(req.Via, "the web"), req.Reason, answer),
		Data:    map[string]any{"user": req.User, "via": or(req.Via, "the web")}}
	err := d.DB.InDurableTx(ctx, func(tx *sql.Tx) error { return d.Records.InsertAudit(ctx, tx, ev) })
	if err != nil {
		return fmt.Errorf("audit the rollback request on %s: %w", req.On, err)
	}
	return nil
}
