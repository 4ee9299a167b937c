package repoconfig

import (
	"fmt"
	"strings"

	"github.com/ripcord/ripcord/rollout"
)

// Shape says how a key's value holds other keys, which is what the
// reference's paths and its completeness test walk.
type Shape int

const (
	// Scalar: a value, or a list of values; no keys below it.
	Scalar Shape = iota
	// Mapping: a mapping whose keys are fixed (Keys).
	Mapping
	// Named: a mapping whose keys the user names; Keys has one entry whose
	// Name is the placeholder, like <app>.
	Named
	// Items: a list of mappings whose keys are Keys.
	Items
)

// KeyDoc documents one key of .github/ripcord.yml. Reference is the one
// table of them: docs/ripcord-yml.md is generated from it, and a test
// proves it lists exactly the keys Load accepts, at every level.
type KeyDoc struct {
	Name    string
	Shape   Shape
	Type    string
	Default string // "" when there is none
	Allowed string // "" when any value of Type is
	Meaning string
	Keys    []KeyDoc
}

func scalar(name, typ, def, allowed, meaning string) KeyDoc {
	return KeyDoc{Name: name, Type: typ, Default: def, Allowed: allowed, Meaning: meaning}
}

func mapping(name, meaning string, keys ...KeyDoc) KeyDoc {
	return KeyDoc{Name: name, Shape: Mapping, Type: "mapping", Meaning: meaning, Keys: keys}
}

func named(name, typ, meaning string, entry KeyDoc) KeyDoc {
	return KeyDoc{Name: name, Shape: Named, Type: typ, Meaning: meaning, Keys: []KeyDoc{entry}}
}

func items(name, meaning string, keys ...KeyDoc) KeyDoc {
	return KeyDoc{Name: name, Shape: Items, Type: "list of mappings", Meaning: meaning, Keys: keys}
}

// one lists values as the reference shows allowed values.
func one(values ...string) string { return strings.Join(values, ", ") }

// Reference is every key of .github/ripcord.yml, in the order the docs show them.
var Reference = []KeyDoc{
	scalar("version", "integer", "", fmt.Sprint(Version), "The file format's version; required."),
	named("apps", "mapping of app name to app", "The applications ripcord looks after, by the name releases use.",
		mapping("<app>", "One application.",
			named("environments", "mapping of environment name to environment", "Where the app is deployed, by the name releases use.",
				environmentDoc),
			withMeaning(gatesDoc, "The gate check runs on the app's release pull requests; all off unless set."),
			withMeaning(recoveryDoc, "This app's changes to the file's recovery policy, key by key."))),
	withMeaning(recoveryDoc, "How failed deploy runs are retried; each key has a default."),
	mapping("commands", "The least repository role that may run each /ripcord command.",
		scalar("retry", "string", string(DefaultCommandPermission), one(permissionNames()...), "Who may run /ripcord retry."),
		scalar("rollback", "string", string(DefaultCommandPermission), one(permissionNames()...), "Who may run /ripcord rollback and press Roll back."),
		scalar("approve", "string", string(DefaultCommandPermission), one(permissionNames()...), "Who may run /ripcord approve.")),
	mapping("eligibility", "Which earlier releases are rollback targets.",
		scalar("window", "integer", fmt.Sprint(DefaultEligibilityWindow), fmt.Sprintf("1 to %d", maxEligibilityWindow),
			"How many of an environment's newest releases are considered (by the gates, the Roll back button and rollback target, the pages, and `GET /api/v1/eligibility` when it has no `window=`).")),
	scalar("stall_after", "duration", "the server's stall_after ("+formatDuration(DefaultStallAfter)+")", "more than 0s",
		"How long this repository's releases may wait for their first fact before ripcord alerts (stall_detected)."),
}

func withMeaning(k KeyDoc, meaning string) KeyDoc {
	k.Meaning = meaning
	return k
}

var environmentDoc = mapping("<env>", "One environment of the app.",
	scalar("cluster", "string", "", "letters, digits, `.`, `_`, `-`",
		"The cluster the environment runs in; part of release ids and of /api/v1/facts/{cluster}."),
	scalar("workflows", "list of strings", "", "workflow file names, like deploy.yml",
		"Deploy workflows whose failed runs ripcord retries, rolls back or reports."),
	rollbackDoc,
	rolloutDoc,
	items("targets", "The hosts a rollout updates.",
		scalar("host", "string", "", "", "The target's host name, passed to the deploy workflow; required."),
		scalar("labels", "mapping of strings", "", "", "Labels that wave selectors match; `region` and `az` place the target.")),
	withMeaning(gatesDoc, "This environment's changes to the app's gates, gate by gate."),
	withMeaning(freezesDoc, "Windows in which no rollout stage starts and, with protection_rule, no deployment job runs."),
	protectionRuleDoc,
	oidcDoc,
)

var oidcDoc = mapping("oidc", "Which workflows' GitHub Actions OIDC tokens may post facts, open releases and post its rollouts' probe results "+
	"for the environment (POST /api/v1/facts, POST /api/v1/releases, POST /api/v1/rollouts/{id}/probes); without it, any workflow of the repository may, from any branch. "+
	"A token must satisfy each list given; a refused one is answered 403 naming the key. The api_token is never restricted.",
	scalar("refs", "list of strings", "any ref", "ref globs, like refs/heads/main or refs/tags/v*",
		"The token's ref claim (the branch or tag the workflow runs on) must match one; `*` matches slashes too, case counts."),
	scalar("environments", "list of strings", "any, or none", "GitHub Environment names, like production",
		"The token's environment claim (the job's `environment:`) must be one, compared without regard to case; a job with no environment is refused."),
)

var rollbackDoc = mapping("rollback", "How the environment goes back to an earlier release; without it ripcord alerts instead.",
	scalar("mode", "string", "", one(RollbackModes...), "How to roll back; required. Each mode uses only its own keys below."),
	scalar("workflow", "string", "", "", "mode workflow: the workflow file dispatched to roll back; required."),
	scalar("input", "string", "", "", "mode workflow: the workflow input that receives the version to go back to; required."),
	scalar("repository", "string", "this repository", "owner/name", "modes workflow and pull-request: where the workflow or the release file lives."),
	scalar("base", "string", "the default branch", "", "mode pull-request: the branch the rollback pull request targets."),
	scalar("file", "string", "", "", "mode pull-request: the release file the rollback pull request edits; required."),
	mapping("fields", "mode pull-request: dotted paths in the release file to change; image or digest is required.",
		scalar("image", "string", "", "", "Path of the image reference, like image.repository."),
		scalar("digest", "string", "", "", "Path of the image digest."),
		scalar("release_id", "string", "", "", "Path of the release id.")),
	scalar("namespace", "string", "the app's name", "", "mode kubernetes: the Deployment's namespace."),
	scalar("deployment", "string", "the app's name", "", "mode kubernetes: the Deployment to patch."),
	scalar("container", "string", "the container named like the Deployment, or the only one", "", "mode kubernetes: the container whose image changes."),
)

const quantity = "number or percentage"

var rolloutDoc = mapping("rollout", "Roll releases out over targets in waves, with health gates between stages; needs targets.",
	scalar("regions", "list of strings", "alphabetical", "", "The order regions are rolled out in; unlisted ones follow alphabetically."),
	items("waves", "The rollout's steps, in order.",
		scalar("name", "string", "", "", "The wave's name, used by approvals_between and in its stages' names; required."),
		scalar("select", "string", "", "label conditions, like region=eu-1, canary!=true", "The wave's targets; required."),
		scalar("by", "string", "one undivided pass", one(string(rollout.ByAZ), string(rollout.ByRegion)), "Split the wave into one pass per availability zone or region; every target of the wave then needs the labels region and az."),
		scalar("parallel_regions", "integer", fmt.Sprint(rollout.DefaultParallelRegions), "1 or more", "How many regions one stage updates together."),
		scalar("bake", "duration", "0s", "", "How long health must hold after the wave before the next one starts."),
		scalar("batch_bake", "duration", "no gate between batches", "", "A health gate after every batch of a pass but the last; 0s is a single read."),
		scalar("max_unavailable", quantity, "the rollout's", "", "Targets out of service at once in this wave."),
		scalar("parallel", quantity, "the rollout's", "", "Targets of a batch updated at once in this wave.")),
	scalar("max_unavailable", quantity, rollout.DefaultMaxUnavailable.String(), "", "Targets out of service at once."),
	scalar("on_failure", "string", string(rollout.Stop), one(string(rollout.Stop), string(rollout.RollbackWave), string(rollout.RollbackAll)),
		"What happens to the stages already run when a pass fails."),
	scalar("approvals_between", "list of strings", "", "wave names", "Waves after which the rollout waits for approval; not the last wave, which no wave follows."),
	mapping("health", "What the gate after each stage reads.",
		scalar("interval", "duration", formatDuration(rollout.DefaultHealthInterval), "", "Time between health reads."),
		scalar("failures_to_stop", "integer", fmt.Sprint(rollout.DefaultFailuresToStop), "1 or more", "Failed reads in a row that fail the stage."),
		items("probes", "HTTP checks of each target.",
			scalar("url", "string", "", "http://{host}… or https://{host}…", "The URL requested on each target."),
			scalar("expect_status", "integer", fmt.Sprint(rollout.DefaultExpectStatus), "100 to 599", "The status a healthy target answers."),
			scalar("from", "string", string(rollout.FromRunners), one(string(rollout.FromRunners), string(rollout.FromServer)),
				"Who sends the probe: the region's runners (reporting facts) or ripcord's server.")),
		items("metrics", "Prometheus queries that must stay within bounds.",
			scalar("name", "string", "", "", "The metric's name in verdicts; required."),
			scalar("query", "string", "", "PromQL", "The query, read at prometheus_url; required."),
			scalar("max", "number", "no upper bound", "", "Fail when the value is above this."),
			scalar("min", "number", "no lower bound", "", "Fail when the value is below this.")),
		mapping("alerts", "Alertmanager alerts that fail the gate.",
			scalar("block_on", "list of strings", "", "label conditions, like severity=critical or alertname=HighErrorRate",
				"A firing alert whose labels match every condition of an entry fails the gate."))),
	scalar("parallel", quantity, fmt.Sprint(rollout.DefaultParallel), "", "Targets of a batch updated at once."),
	scalar("prometheus_url", "string", "", "URL", "Where health.metrics are queried."),
	scalar("alertmanager_url", "string", "", "URL", "Where health.alerts are read."),
	scalar("workflow", "string", rollout.DefaultWorkflow, "workflow file name", "The deploy workflow dispatched once per batch."),
	scalar("prepare", "string", "", "workflow file name", "A workflow run once before the first batch (secrets, artifacts, QA)."),
	scalar("probe_workflow", "string", rollout.DefaultProbeWorkflow, "workflow file name",
		"Dispatched on a region's runners at each reading with probes from: runners; it posts their results with the action's mode: probe."),
	scalar("queue_timeout", "duration", formatDuration(rollout.DefaultQueueTimeout), "more than 0s",
		"How long a batch's run may wait for a runner before its pass fails."),
	mapping("approvals", "Who approves a rollout paused by approvals_between, how many, and how long they have.",
		scalar("permission", "string", rollout.DefaultApprovalPermission, "write, maintain, admin", "The least repository role that may approve."),
		scalar("count", "integer", fmt.Sprint(rollout.DefaultApprovalCount), "1 or more", "Approvals needed."),
		scalar("expiry", "duration", formatDuration(rollout.DefaultApprovalExpiry), "more than 0s", "How long the rollout waits for them.")),
	withMeaning(freezesDoc, "This rollout's freeze windows, added to the environment's."),
	protectionRuleDoc,
)

var freezesDoc = items("freezes", "",
	scalar("start", "time", "", "RFC 3339, like 2026-12-24T18:00:00+01:00", "A one-off window's start; with end."),
	scalar("end", "time", "", "RFC 3339, after start", "A one-off window's end (exclusive); with start."),
	mapping("weekly", "A window that repeats every week; instead of start and end.",
		scalar("days", "list of strings", "", "weekday names, like sat", "The days the window starts on; required."),
		scalar("from", "string", "", `time of day, "00:00" to "23:59"`, "When the window starts; required."),
		scalar("to", "string", "", `time of day, up to "24:00"`, "When the window ends; required."),
		scalar("timezone", "string", rollout.DefaultFreezeTimezone, "IANA timezone, like Europe/Rome", "Where from and to are read.")),
	scalar("regions", "list of strings", "every region", "region labels of the targets", "The regions the window blocks; each must be the region of one of the environment's targets."),
	scalar("reason", "string", "", "", "Why, shown when a stage or deployment is held."),
)

var protectionRuleDoc = mapping("protection_rule", "Answer GitHub's custom deployment protection rule for the environment.",
	scalar("enabled", "boolean", "false", "", "Approve or reject deployment jobs by the freeze windows."),
	scalar("gates", "boolean", "false", "", "Also reject a deployment whose release failed its gates."))

var gatesDoc = mapping("gates", "",
	scalar("branches", "list of strings", "", "globs, like release-*", "Release branches whose pull requests the gates run on."),
	mapping("provenance", "Verify the image's signature and provenance attestation.",
		scalar("keys", "list of strings", "", "paths in the repository", "Public keys that may sign the image."),
		items("identities", "Keyless signers that may sign the image.",
			scalar("issuer", "string", "", "URL", "The signer's OIDC issuer."),
			scalar("subject_regexp", "string", "", "Go regexp", "The signer's subject must match this.")),
		scalar("trusted_root", "string", "", "path in the repository", "The Sigstore trusted root keyless signatures are verified against, offline; required with identities."),
		scalar("builder_id", "string", "", "", "The builder the provenance must name."),
		scalar("source_repository", "string", "", "", "The source repository the provenance must name.")),
	mapping("values", "Validate the release file.",
		scalar("schema", "string", "", "path in the repository", "The JSON Schema the release file must satisfy.")),
	scalar("commit_signing", "boolean", "false", "", "Require the pull request's commits to be signed."),
	mapping("sast", "Fail on static analysis findings.",
		scalar("severity", "string", DefaultSASTSeverity, one(SASTSeverities...), "The lowest severity that fails.")),
	mapping("sbom", "Require an SBOM attestation.",
		scalar("formats", "list of strings", one(DefaultSBOMFormats...), one(SBOMFormats...), "The formats accepted.")),
	mapping("image_scan", "Fail on the image's known vulnerabilities.",
		scalar("severity", "string", DefaultImageScanSeverity, one(ImageScanSeverities...), "The lowest severity that fails."),
		scalar("allow", "list of strings", "", "CVE or GHSA ids", "Vulnerabilities accepted anyway.")),
	mapping("process", "Process gates, each its own check run.",
		mapping("itsm", "Require a change reference in the pull request's body.",
			scalar("body_field", "string", "", "Go regexp", "The reference the body must contain.")),
		mapping("qa", "Require a QA label.",
			scalar("labels", "list of strings", "", "", "One of these labels must be on the pull request (compared case-insensitively, as GitHub compares label names).")),
		mapping("policy_validation", "Ask an external policy service.",
			scalar("url", "string", "", "URL", "The service's endpoint."),
			scalar("timeout", "duration", formatDuration(DefaultPolicyValidationTimeout), "more than 0s", "How long to wait for its answer."))),
)

var recoveryDoc = mapping("recovery", "",
	scalar("max_retries", "integer", fmt.Sprint(DefaultMaxRetries), fmt.Sprintf("0 to %d", maxRetriesLimit), "Re-runs of a failed deploy run before ripcord rolls back or alerts."),
	scalar("initial_backoff", "duration", formatDuration(DefaultInitialBackoff), "", "Wait before the first re-run."),
	scalar("multiplier", "number", fmt.Sprint(DefaultMultiplier), "1 or more", "Factor the wait grows by with each re-run."),
	scalar("max_backoff", "duration", formatDuration(DefaultMaxBackoff), "more than 0s, at least initial_backoff", "The longest wait."),
	scalar("failure_types", "mapping of failure type to list of globs", "", "",
		"Job-name globs that classify a failure (build_failure, test_failure, health_check_failure or a name of your own)."),
)
