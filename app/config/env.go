package config

import (
	"fmt"
	"slices"
	"strings"

	suggestion "github.com/ripcord/ripcord/internal/suggest"
)

// EnvPrefix starts the name of every environment variable ripcord reads.
const EnvPrefix = "RIPCORD_"

// commandEnv are the RIPCORD_* variables read by ripcord's other commands
// (cmd/ripcord): an operator's shell or a unit file may hold them beside
// the server's settings, so they are known, not typos.
var commandEnv = []string{
	"RIPCORD_CONFIG",             // serve, migrate, validate: the settings file (--config)
	"RIPCORD_SERVER",             // releases, fact, rollback, rollout, agent: --server
	"RIPCORD_CLUSTER_TOKEN",      // fact, agent: the cluster's token
	"RIPCORD_CLUSTER",            // agent: --cluster
	"RIPCORD_CLUSTER_TOKEN_FILE", // agent: --token-file
	"RIPCORD_AGENT_STATE",        // agent: --state-dir
}

// exemptEnv are the RIPCORD_* variables of this repository's tests and
// scripts. ripcord itself does not read them, but a test that runs the
// binary passes its own environment on (with-postgres.sh exports
// RIPCORD_TEST_POSTGRES for every test), so they are never called unknown.
var exemptEnv = []string{
	"RIPCORD_TEST_POSTGRES",  // scripts/with-postgres.sh, internal/testdb: the tests' PostgreSQL server
	"RIPCORD_SHARED",         // internal/githubtest: where GitHub's API description and examples are
	"RIPCORD_K8S_BIN",        // scripts/k8s-binaries.sh, internal/k8stest: the Kubernetes binaries
	"RIPCORD_HELM_BIN",       // scripts/helm.sh, deploy tests: the helm binary
	"RIPCORD_E2E_LOG",        // end-to-end tests: keep the server's log
	"RIPCORD_RETRY_DELAYS",   // actions/fact/post-fact.sh: its waits, shortened by its tests
	"RIPCORD_MIN_FREE_GB",    // scripts/trim-gocache.sh: the free space under which it trims
	"RIPCORD_CACHE_KEEP_MIN", // scripts/trim-gocache.sh: the age of the build cache entries it keeps
}

// KnownEnv lists every RIPCORD_* variable that is not a typo: the
// settings', the other commands' and the exempt ones of the tests, sorted.
func KnownEnv() []string {
	out := slices.Concat(commandEnv, exemptEnv)
	for _, s := range settings {
		out = append(out, s.Env)
	}
	slices.Sort(out)
	return out
}

// UnknownEnv is a RIPCORD_* environment variable no part of ripcord reads:
// most likely a typo of a setting, whose value is then silently ignored.
type UnknownEnv struct {
	Name string
	// Nearest is the known variable it was most likely meant to be;
	// empty when none is close.
	Nearest string
}

func (u UnknownEnv) String() string {
	msg := fmt.Sprintf("environment variable %s is not a ripcord setting and is ignored", u.Name)
	if u.Nearest != "" {
		return msg + "; did you mean " + u.Nearest + "?"
	}
	return msg + "; the settings are in the README's configuration reference"
}

// CheckEnv returns the unknown RIPCORD_* variables of environ (as
// os.Environ gives it), sorted by name, each once.
func CheckEnv(environ []string) []UnknownEnv {
	known := KnownEnv()
	var out []UnknownEnv
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix) || slices.Contains(known, name) ||
			slices.ContainsFunc(out, func(u UnknownEnv) bool { return u.Name == name }) {
			continue
		}
		out = append(out, UnknownEnv{Name: name, Nearest: nearestEnv(name, known)})
	}
	slices.SortFunc(out, func(a, b UnknownEnv) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// nearestEnv is the known variable closest to name, compared without the
// prefix they share, or "" when even the closest is more than a third of
// the name away (at least two edits are allowed: a swapped pair of letters,
// RIPCORD_DATABSE, is two), which would be a guess rather than a typo.
func nearestEnv(name string, known []string) string {
	word := strings.TrimPrefix(name, EnvPrefix)
	best, bestDist := "", max(2, len(word)/3)+1
	for _, k := range known {
		if d := suggestion.Distance(word, strings.TrimPrefix(k, EnvPrefix)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}
