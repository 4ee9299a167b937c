// Package repoconfig reads a repository's .github/ripcord.yml: which apps and
// environments ripcord looks after, which workflows deploy them, how each one
// rolls back, the recovery policy, the gates and who may run which command.
//
// Parsing is strict: an unknown key, a wrong type or a bad value is a Problem
// that names the key path and its line and column, so `ripcord validate` and
// the config check run can point at the exact spot. Defaults live in
// defaults.go and are applied in one place after a file has parsed cleanly.
package repoconfig
