package repoconfig

import (
	"github.com/ripcord/ripcord/rollout"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is a parsed .github/ripcord.yml with defaults applied.
type Config struct {
	Version     int
	Apps        map[string]*App
	Recovery    Recovery // the file's recovery section over the defaults
	Commands    Commands
	Eligibility Eligibility
	// StallAfter is the file's stall_after; zero when it leaves it out, so
	// the server's setting applies.
	StallAfter time.Duration

	// appOrder keeps apps in file order so lookups that can match several
	// (AppForWorkflow) answer the same way every time.
	appOrder []string
	// text is the file Load made the config from; "" for one built in code.
	text string
}

// Text is the file the config was loaded from, so that a reader can keep
// the config and load it again later (the server keeps each repository's
// last read in its database); "" for a Config not made by Load.
func (c *Config) Text() string { return c.text }

// App is one application and the environments it is deployed to.
type App struct {
	Name         string
	Environments map[string]*Environment
	Gates        Gates             // the app's gates; environments may override them
	Recovery     *RecoveryOverride // nil when the app keeps the file's recovery policy

	envOrder []string
}

// Environment is where an app is deployed and how it gets back.
type Environment struct {
	Name      string
	Cluster   string
	Workflows []string // deploy workflow files whose failures ripcord handles
	Rollback  Rollback
	// Rollout and Targets are kept raw for the rollout package, which owns
	// their schema (seed 001); nil when absent.
	Rollout *yaml.Node
	Targets *yaml.Node
	// Plan is the rollout planned over the targets (nil without rollout:),
	// with the default max_parallel; a server with its own plans again.
	Plan  *rollout.Plan
	Gates Gates // overrides of the app's gates, key by key
	// Freezes are the environment's freeze windows: they hold a rollout's
	// stages and, with ProtectionRule, plain deployment jobs. A rollout's
	// own freezes are added to them in Plan.
	Freezes []rollout.Freeze
	// ProtectionRule makes ripcord answer GitHub's deployment protection
	// rule for the environment (with or without a rollout).
	ProtectionRule rollout.ProtectionRule
	// Regions are the region labels of the environment's targets, sorted;
	// empty without targets.
	Regions []string
	// OIDC restricts which workflows' tokens may post facts, releases and
	// rollouts' probe results for the environment; nil when the file sets no rule (any workflow of
	// the repository may).
	OIDC *OIDCRule

	freezes, protectionRule *yaml.Node // raw, parsed by the rollout package
}

// Rollback modes.
const (
	ModePullRequest = "pull-request"
	ModeWorkflow    = "workflow"
	ModeKubernetes  = "kubernetes"
)

// RollbackModes lists the modes in the order the docs present them.
var RollbackModes = []string{ModePullRequest, ModeWorkflow, ModeKubernetes}

// Rollback says how an environment goes back to an earlier release.
// Mode is empty when the environment has no rollback section: ripcord then
// alerts instead of rolling back.
type Rollback struct {
	Mode string

	// workflow: dispatch Workflow with the previous version in Input.
	Workflow string
	Input    string

	// pull-request: edit File on Base in Repository (default: this repository,
	// Base default: its default branch) at the dotted paths in Fields.
	Repository string
	Base       string
	File       string
	Fields     Fields

	// kubernetes: patch Container of Deployment in Namespace (both default to
	// the app name; Container empty means the one named like the Deployment,
	// or the only one).
	Namespace  string
	Deployment string
	Container  string
}

// Fields are dotted paths into the release file of a pull-request rollback.
type Fields struct {
	Image     string
	Digest    string
	ReleaseID string
}

// Eligibility tunes which earlier releases are safe rollback targets.
type Eligibility struct {
	Window int // how many of the newest records to look at
}
