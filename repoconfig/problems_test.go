package repoconfig

import (
	"strings"
	"testing"
)

// env wraps an environment body (indented 8 spaces) into a minimal file.
func env(body string) string {
	return "version: 1\napps:\n  checkout:\n    environments:\n      prod:\n" + body
}

// schemaView says what the JSON Schema can see of an invalid document.
type schemaView int

const (
	schemaRejects   schemaView = iota // the schema rejects it too
	schemaCannotSee                   // a check only Go can make (cross-key, glob syntax)
	notJSON                           // not a single JSON value (syntax error, duplicate keys, ...)
)

type problemCase struct {
	name   string
	doc    string
	want   []string
	schema schemaView
}

// problemCases are checked against Load here and against the JSON Schema in
// schema_test.go, so the two agree on what is invalid.
var problemCases = []problemCase{
	{
		name: "camelCase key from seed 001 habits gets its snake_case spelling",
		doc:  "version: 1\nrecovery:\n  maxRetries: 3\n",
		want: []string{`f.yml:3:3: recovery.maxRetries: unknown key "maxRetries"; did you mean max_retries? (allowed: max_retries, initial_backoff, multiplier, max_backoff, failure_types)`},
	},
	{
		name: "typo in max_retries is an error, not a silently ignored key",
		doc:  "version: 1\nrecovery:\n  max_retry: 3\n",
		want: []string{`f.yml:3:3: recovery.max_retry: unknown key "max_retry"; did you mean max_retries? (allowed: max_retries, initial_backoff, multiplier, max_backoff, failure_types)`},
	},
	{
		name: "unrelated unknown key gets the allowed list but no wild guess",
		doc:  "version: 1\nrollbacks: {}\n",
		want: []string{`f.yml:2:1: rollbacks: unknown key "rollbacks" (allowed: version, apps, recovery, commands, eligibility, stall_after)`},
	},
	{
		name: "future version is refused instead of half understood",
		doc:  "version: 2\n",
		want: []string{`f.yml:1:10: version: must be 1, not the number 2`},
	},
	{
		name: "file without version",
		doc:  "apps: {}\n",
		want: []string{`f.yml:1:1: missing required key version`},
	},
	{
		name: "workflow rollback without the input that carries the version",
		doc:  env("        rollback:\n          mode: workflow\n          workflow: deploy.yml\n"),
		want: []string{`f.yml:7:11: apps.checkout.environments.prod.rollback: mode workflow needs key input`},
	},
	{
		name: "pull-request rollback without fields would not know what to edit",
		doc:  env("        rollback:\n          mode: pull-request\n          file: release.yaml\n"),
		want: []string{`f.yml:7:11: apps.checkout.environments.prod.rollback: mode pull-request needs fields.image or fields.digest, the paths in the release file to change`},
	},
	{
		name: "pull-request fields with only release_id would not change the image",
		doc:  env("        rollback:\n          mode: pull-request\n          file: release.yaml\n          fields: {release_id: release.id}\n"),
		want: []string{`f.yml:9:19: apps.checkout.environments.prod.rollback.fields: mode pull-request needs image or digest, the paths in the release file to change`},
	},
	{
		name: "key of another rollback mode is an error, not silently ignored",
		doc:  env("        rollback:\n          mode: kubernetes\n          file: release.yaml\n"),
		want: []string{`f.yml:8:11: apps.checkout.environments.prod.rollback.file: file is not used by mode kubernetes (it uses namespace, deployment, container)`},
	},
	{
		name: "unknown rollback mode lists the modes",
		doc:  env("        rollback: {mode: argocd}\n"),
		want: []string{`f.yml:6:26: apps.checkout.environments.prod.rollback.mode: "argocd" is not one of pull-request, workflow, kubernetes`},
	},
	{
		name: "backoff without a unit is not guessed to be seconds",
		doc:  "version: 1\nrecovery:\n  initial_backoff: 10\n",
		want: []string{`f.yml:3:20: recovery.initial_backoff: must be a duration like 10s, 5m or 1h30m, not the number 10`},
	},
	{
		name: "multiplier below 1 would shrink the backoff",
		doc:  "version: 1\nrecovery:\n  multiplier: 0.5\n",
		want: []string{`f.yml:3:15: recovery.multiplier: 0.5 is too small: must be at least 1`},
	},
	{
		name:   "max_backoff shorter than initial_backoff",
		doc:    "version: 1\nrecovery:\n  initial_backoff: 1m\n  max_backoff: 30s\n",
		want:   []string{`f.yml:4:16: recovery.max_backoff: max_backoff (30s) must not be shorter than initial_backoff (1m)`},
		schema: schemaCannotSee,
	},
	{
		name:   "app override pushes initial_backoff past the default max_backoff",
		doc:    "version: 1\napps:\n  checkout:\n    recovery:\n      initial_backoff: 10m\n",
		want:   []string{`f.yml:5:24: apps.checkout.recovery.initial_backoff: max_backoff (5m) must not be shorter than initial_backoff (10m)`},
		schema: schemaCannotSee,
	},
	{
		name: "more retries than GitHub allows re-runs",
		doc:  "version: 1\nrecovery:\n  max_retries: 51\n",
		want: []string{`f.yml:3:16: recovery.max_retries: 51 is out of range: must be from 0 to 50`},
	},
	{
		name: "retries spelled out in words",
		doc:  "version: 1\nrecovery:\n  max_retries: three\n",
		want: []string{`f.yml:3:16: recovery.max_retries: must be a whole number, not the string "three"`},
	},
	{
		name: "subject regexp that does not compile",
		doc:  "version: 1\napps:\n  checkout:\n    gates:\n      provenance:\n        identities:\n          - issuer: https://token.actions.githubusercontent.com\n            subject_regexp: '^repo:(acme/checkout'\n",
		want: []string{"f.yml:8:29: apps.checkout.gates.provenance.identities[0].subject_regexp: invalid regular expression: error parsing regexp: missing closing ): `^repo:(acme/checkout`"},
	},
	{
		name:   "job glob with an unclosed bracket",
		doc:    "version: 1\nrecovery:\n  failure_types:\n    build_failure: ['build[']\n",
		want:   []string{`f.yml:4:21: recovery.failure_types.build_failure[0]: invalid pattern: glob "build[": unclosed [ at position 6`},
		schema: schemaCannotSee,
	},
	{
		name:   "OIDC ref glob with an unclosed bracket",
		doc:    env("        oidc:\n          refs: ['refs/heads/release-[0-9']\n"),
		want:   []string{`f.yml:7:18: apps.checkout.environments.prod.oidc.refs[0]: invalid pattern: glob "refs/heads/release-[0-9": unclosed [ at position 20`},
		schema: schemaCannotSee,
	},
	{
		name: "OIDC ref written as a bare branch name, which no token's ref claim is",
		doc:  env("        oidc:\n          refs: [main]\n"),
		want: []string{`f.yml:7:18: apps.checkout.environments.prod.oidc.refs[0]: "main" never matches: a token's ref claim is a full ref, like refs/heads/main or refs/tags/main`},
	},
	{
		name: "OIDC rule that names nothing restricts nothing",
		doc:  env("        oidc: {}\n"),
		want: []string{`f.yml:6:15: apps.checkout.environments.prod.oidc: names no refs and no environments, so it would restrict nothing; list refs, environments or both`},
	},
	{
		name: "OIDC environments given empty would refuse every workflow",
		doc:  env("        oidc:\n          environments: []\n"),
		want: []string{`f.yml:7:25: apps.checkout.environments.prod.oidc.environments: is empty, so it would refuse every workflow; list at least one, a GitHub Environment, like production`},
	},
	{
		name: "OIDC claim spelled as GitHub's claim name gets the key's spelling",
		doc:  env("        oidc:\n          ref: [refs/heads/main]\n"),
		want: []string{`f.yml:7:11: apps.checkout.environments.prod.oidc.ref: unknown key "ref"; did you mean refs? (allowed: refs, environments)`},
	},
	{
		name: "command permission that GitHub does not have",
		doc:  "version: 1\ncommands:\n  approve: owner\n",
		want: []string{`f.yml:3:12: commands.approve: "owner" is not one of read, triage, write, maintain, admin`},
	},
	{
		name: "rollout as a list and targets as a mapping",
		doc:  env("        rollout: [wave1]\n        targets: {host: a}\n"),
		want: []string{
			`f.yml:6:18: apps.checkout.environments.prod.rollout: must be a mapping (the rollout spec), not a list`,
			`f.yml:7:18: apps.checkout.environments.prod.targets: must be a list of targets, not a mapping`,
		},
	},
	{
		name:   "YAML syntax error keeps its line",
		doc:    "version: 1\napps:\n  checkout\n    environments: {}\n",
		want:   []string{`f.yml:4:1: invalid YAML: mapping values are not allowed in this context`},
		schema: notJSON,
	},
	{
		name:   "empty file",
		doc:    "",
		want:   []string{"f.yml:1:1: the file is empty; it needs at least `version: 1`"},
		schema: notJSON,
	},
	{
		name:   "second YAML document would be ignored",
		doc:    "version: 1\n---\nversion: 1\n",
		want:   []string{`f.yml:2:1: only one YAML document is allowed; remove the second ---`},
		schema: notJSON,
	},
	{
		name:   "app defined twice, the second silently winning",
		doc:    "version: 1\napps:\n  checkout: {}\n  checkout: {}\n",
		want:   []string{`f.yml:4:3: apps.checkout: "checkout" is defined twice`},
		schema: notJSON,
	},
	{
		name: "stall_after of zero would alert on every release",
		doc:  "version: 1\nstall_after: 0s\n",
		want: []string{`f.yml:2:14: stall_after: must be longer than 0s`},
	},
	{
		name: "failure type named unknown or in CamelCase",
		doc:  "version: 1\nrecovery:\n  failure_types:\n    unknown: ['*']\n    BuildFailure: ['b*']\n",
		want: []string{
			`f.yml:4:5: recovery.failure_types.unknown: "unknown" is reserved for failures no pattern matches; pick another name`,
			`f.yml:5:5: recovery.failure_types.BuildFailure: failure type "BuildFailure" must be snake_case, like build_failure`,
		},
	},
	{
		name: "YAML 1.1 yes is not taken for true",
		doc:  "version: 1\napps:\n  checkout:\n    gates:\n      commit_signing: yes\n",
		want: []string{`f.yml:5:23: apps.checkout.gates.commit_signing: must be true or false, not the string "yes"`},
	},
	{
		name: "eligibility window of zero would make nothing eligible",
		doc:  "version: 1\neligibility: {window: 0}\n",
		want: []string{`f.yml:2:23: eligibility.window: 0 is out of range: must be from 1 to 100`},
	},
	{
		name: "allowed vulnerability that is a nickname, not an id",
		doc:  "version: 1\napps:\n  checkout:\n    gates:\n      image_scan: {allow: [CVE-2024-3094, log4shell]}\n",
		want: []string{`f.yml:5:43: apps.checkout.gates.image_scan.allow[1]: "log4shell" is not a vulnerability id like CVE-2024-3094 or GHSA-xxxx-xxxx-xxxx`},
	},
	{
		name: "workflow named without its file extension",
		doc:  env("        workflows: [deploy]\n"),
		want: []string{`f.yml:6:21: apps.checkout.environments.prod.workflows[0]: "deploy" is not a workflow file name like deploy.yml`},
	},
	{
		name: "release file path that climbs out of the repository",
		doc:  env("        rollback: {mode: pull-request, file: ../other/release.yaml, fields: {image: image.tag}}\n"),
		want: []string{`f.yml:6:46: apps.checkout.environments.prod.rollback.file: "../other/release.yaml" is not a path inside the repository, like apps/checkout/prod/release.yaml`},
	},
	{
		name: "process gates with nothing to check",
		doc:  "version: 1\napps:\n  checkout:\n    gates:\n      process:\n        qa: {labels: []}\n        itsm: {}\n        policy_validation: {url: ftp://x}\n",
		want: []string{
			`f.yml:6:22: apps.checkout.gates.process.qa.labels: must name at least one label`,
			`f.yml:7:15: apps.checkout.gates.process.itsm: missing required key body_field`,
			`f.yml:8:34: apps.checkout.gates.process.policy_validation.url: "ftp://x" is not an http:// or https:// URL`,
		},
	},
	{
		name: "namespace that Kubernetes would reject",
		doc:  env("        rollback:\n          mode: kubernetes\n          namespace: Prod_NS\n"),
		want: []string{`f.yml:8:22: apps.checkout.environments.prod.rollback.namespace: "Prod_NS" is not a Kubernetes namespace name`},
	},
	{
		name: "file that is a list",
		doc:  "- version: 1\n",
		want: []string{`f.yml:1:1: the file must be a mapping of keys (version: 1, apps: ...), not a list`},
	},
	{
		name: "empty sbom formats and a sast severity from the image scanner's scale",
		doc:  "version: 1\napps:\n  checkout:\n    gates:\n      sbom: {formats: []}\n      sast: {severity: critical}\n",
		want: []string{
			`f.yml:5:23: apps.checkout.gates.sbom.formats: must name at least one of spdx or cyclonedx`,
			`f.yml:6:24: apps.checkout.gates.sast.severity: "critical" is not one of error, high, medium, low, note`,
		},
	},
	{
		name: "pull-request rollback without the release file",
		doc:  env("        rollback: {mode: pull-request, fields: {image: image.tag}}\n"),
		want: []string{`f.yml:6:19: apps.checkout.environments.prod.rollback: mode pull-request needs key file`},
	},
	{
		name: "workflow rollback carrying a kubernetes namespace",
		doc:  env("        rollback: {mode: workflow, workflow: deploy.yml, input: version, namespace: shop}\n"),
		want: []string{`f.yml:6:74: apps.checkout.environments.prod.rollback.namespace: namespace is not used by mode workflow (it uses workflow, input, repository)`},
	},
	{
		name: "rollback without a mode",
		doc:  env("        rollback: {workflow: deploy.yml}\n"),
		want: []string{`f.yml:6:19: apps.checkout.environments.prod.rollback: missing required key mode`},
	},
	{
		name: "keyless identity without its issuer would trust any issuer",
		doc:  "version: 1\napps:\n  checkout:\n    gates:\n      provenance:\n        identities: [{subject_regexp: '.*'}]\n",
		want: []string{`f.yml:6:22: apps.checkout.gates.provenance.identities[0]: missing required key issuer`},
	},
	{
		name: "unknown gate is not silently skipped",
		doc:  "version: 1\napps:\n  checkout:\n    gates:\n      image_scanning: {}\n",
		want: []string{`f.yml:5:7: apps.checkout.gates.image_scanning: unknown key "image_scanning"; did you mean image_scan? (allowed: branches, provenance, values, commit_signing, sast, sbom, image_scan, process)`},
	},
	{
		name: "environment key at the app level",
		doc:  "version: 1\napps:\n  checkout:\n    workflows: [deploy.yml]\n",
		want: []string{`f.yml:4:5: apps.checkout.workflows: unknown key "workflows" (allowed: environments, gates, recovery)`},
	},
	{
		name: "cluster name that would break release ids",
		doc:  env("        cluster: prod/eu\n"),
		want: []string{`f.yml:6:18: apps.checkout.environments.prod.cluster: "prod/eu" is not a cluster name (letters, digits, '.', '_', '-')`},
	},
	{
		name: "problems come in file order even when found late",
		doc:  "version: 1\nrecovery:\n  initial_backoff: 1m\n  max_backoff: 30s\ncommands: {retry: root}\n",
		want: []string{
			`f.yml:4:16: recovery.max_backoff: max_backoff (30s) must not be shorter than initial_backoff (1m)`,
			`f.yml:5:19: commands.retry: "root" is not one of read, triage, write, maintain, admin`,
		},
	},
}

func TestProblemsPointAtTheWrongSpot(t *testing.T) {
	for _, tt := range problemCases {
		t.Run(tt.name, func(t *testing.T) {
			got := Validate("f.yml", []byte(tt.doc))
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("Validate:\n got: %q\nwant: %q", got, tt.want)
			}
			cfg, problems := Load([]byte(tt.doc))
			if cfg != nil || len(problems) != len(tt.want) {
				t.Errorf("Load returned config %v with %d problems, want nil with %d", cfg != nil, len(problems), len(tt.want))
			}
		})
	}
}

func TestProblemFormat(t *testing.T) {
	tests := []struct {
		name string
		p    Problem
		want string
	}{
		{"located problem with a key path", Problem{Path: "a.b", Line: 3, Column: 7, Message: "bad"}, "f.yml:3:7: a.b: bad"},
		{"syntax error without a column prints column 1", Problem{Line: 4, Message: "bad"}, "f.yml:4:1: bad"},
		{"problem without a position keeps the file name", Problem{Message: "bad"}, "f.yml: bad"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Format("f.yml"); got != tt.want {
				t.Errorf("Format = %q, want %q", got, tt.want)
			}
		})
	}
	if got := (Problem{Path: "a", Line: 1, Column: 2, Message: "bad"}).Error(); got != "1:2: a: bad" {
		t.Errorf("Error = %q", got)
	}
	if got := (Problem{Message: "bad"}).Error(); got != "bad" {
		t.Errorf("Error without position = %q", got)
	}
}
