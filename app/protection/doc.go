// Package protection is ripcord as a GitHub custom deployment protection
// rule (DESIGN.md "Waves", issue #8 item 7): a deployment_protection_rule
// event for an environment that enables `protection_rule` is approved or
// rejected by the freeze windows of the environment's regions and, with
// `gates: true`, by the release's gate check runs — so plain `environment:`
// jobs get freezes and gates without a rollout. The decision is a pure
// function (decide.go); the worker gathers its inputs and posts the review.
package protection
