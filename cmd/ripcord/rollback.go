package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
)

// rollbackAnswer is the server's 202 to POST /api/v1/rollbacks.
type rollbackAnswer struct {
	ReleaseID         string `json:"release_id"`
	RollbackOf        string `json:"rollback_of"`
	TargetReleaseID   string `json:"target_release_id"`
	Eligible          bool   `json:"eligible"`
	EligibilityReason string `json:"eligibility_reason"`
	Repository        string `json:"repository"`
	JobID             int64  `json:"job_id"`
	Duplicate         bool   `json:"duplicate"`
	Release           string `json:"release"`
	PRURL             string `json:"pr_url"`
}

// runRollback is `ripcord rollback`: POST /api/v1/rollbacks. The server
// decides at once (a refusal says why) and opens the pull request in a job;
// `ripcord releases show <release_id>` shows it once it is open.
func runRollback(args []string) int {
	fs := newFlags("ripcord rollback", "--app APP --environment ENV --reason WHY [--to RELEASE_ID|DIGEST] [flags]",
		"Rolls an environment back through the server (POST /api/v1/rollbacks): the target is the newest "+
			"eligible release before the current one, or the one --to names; the server records the rollback "+
			"as a release and a job opens its pull request in the environment's GitOps repository. It prints "+
			"the rollback's release id; `ripcord releases show ID` shows the pull request once it is open.",
		`ripcord rollback --app checkout --environment prod --reason "error rate up after v42"`,
		`ripcord rollback --app checkout --environment prod --cluster prod-eu --to checkout-v41:prod-eu/prod --reason "v42 fails checkout"`)
	client := clientFlags(fs, "RIPCORD_API_TOKEN", "the server's api_token")
	app := fs.String("app", "", "the app to roll back (required)")
	env := fs.String("environment", "", "the environment (required)")
	cluster := fs.String("cluster", "", "the cluster (default: the environment's in .github/ripcord.yml)")
	to := fs.String("to", "", "the release id or digest to roll back to (default: the newest eligible release before the current one)")
	reason := fs.String("reason", "", "why (required; it goes into the commit trailer and the pull request)")
	repo := fs.String("repository", "", "the app's repository, owner/name (default: the one its newest release names)")
	asJSON := fs.Bool("json", false, "print the server's JSON")
	if code, stop := parse(fs, args); stop {
		return code
	}
	if code, stop := noArgs(fs); stop {
		return code
	}
	if code, stop := required("ripcord rollback", [2]string{"app", *app}, [2]string{"environment", *env}, [2]string{"reason", *reason}); stop {
		return code
	}
	c, err := client()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ripcord rollback:", err)
		return 2
	}
	body, _ := json.Marshal(map[string]string{"app": *app, "environment": *env, "cluster": *cluster, "to": *to,
		"reason": *reason, "repository": *repo})
	var out rollbackAnswer
	err = c.do(context.Background(), "POST", "/api/v1/rollbacks", body, &out)
	return finish(err, *asJSON, out, func() {
		verb := "started"
		if out.Duplicate {
			verb = "already started"
		}
		fmt.Printf("rollback %s %s: %s replaces %s with %s\n", out.ReleaseID, verb, out.ReleaseID, out.RollbackOf, out.TargetReleaseID)
		if out.Eligible {
			fmt.Printf("eligible: %s\n", out.EligibilityReason)
		} else {
			fmt.Printf("NOT eligible (ordinary promotion, every gate applies): %s\n", out.EligibilityReason)
		}
		if out.PRURL != "" {
			fmt.Printf("pull request open already: %s\n", out.PRURL)
			return
		}
		fmt.Printf("pull request: being opened in %s (job %d); see `ripcord releases show %s`\n", out.Repository, out.JobID, out.ReleaseID)
	})
}
