package app

// webhookEvents is every event GitHub sends to Apps that ripcord knows of.
// The intake stores all of them, and any other event GitHub sends too (it
// adds events): an event ripcord does not act on is kept and marked
// ignored, so the deliveries API tells the whole story of what GitHub sent.
// Metrics label an event not listed here "other".
var webhookEvents = []string{
	"branch_protection_configuration", "branch_protection_rule", "check_run", "check_suite",
	"code_scanning_alert", "commit_comment", "create", "custom_property", "custom_property_values",
	"delete", "dependabot_alert", "deploy_key", "deployment", "deployment_protection_rule",
	"deployment_review", "deployment_status", "discussion", "discussion_comment", "fork",
	"github_app_authorization", "gollum", "installation", "installation_repositories",
	"installation_target", "issue_comment", "issues", "label", "marketplace_purchase", "member",
	"membership", "merge_group", "meta", "milestone", "org_block", "organization", "package",
	"page_build", "personal_access_token_request", "ping", "project", "project_card",
	"project_column", "projects_v2", "projects_v2_item", "public", "pull_request",
	"pull_request_review", "pull_request_review_comment", "pull_request_review_thread", "push",
	"registry_package", "release", "repository", "repository_advisory", "repository_dispatch",
	"repository_import", "repository_ruleset", "repository_vulnerability_alert",
	"secret_scanning_alert", "secret_scanning_alert_location", "secret_scanning_scan",
	"security_advisory", "security_and_analysis", "sponsorship", "star", "status", "sub_issues",
	"team", "team_add", "watch", "workflow_dispatch", "workflow_job", "workflow_run",
}

// listedEvents is webhookEvents as a set.
var listedEvents = func() map[string]bool {
	m := make(map[string]bool, len(webhookEvents))
	for _, e := range webhookEvents {
		m[e] = true
	}
	return m
}()
