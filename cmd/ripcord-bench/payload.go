package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// body builds a valid delivery of n bytes (at least its base payload, about
// 5.5 kB) shaped like what GitHub sends: a check_suite "requested" event
// with the repository, organization and sender objects full of API URL
// templates, and commits with random SHAs and messages to reach the size. Its content matters to
// what a server does with it (a body of one repeated byte is cheaper to
// validate and compresses to almost nothing); this one compresses about as
// much as GitHub's own payloads. It is the same on every run.
func body(n int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	sha := func() string {
		b := make([]byte, 20)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return hex.EncodeToString(b)
	}
	const api = "https://api.github.com"
	repo := map[string]any{"id": 186853002, "node_id": "MDEwOlJlcG9zaXRvcnkxODY4NTMwMDI=", "name": "checkout",
		"full_name": "acme/checkout", "private": true, "html_url": "https://github.com/acme/checkout",
		"description": "Checkout service", "fork": false, "url": api + "/repos/acme/checkout",
		"created_at": "2019-05-15T15:19:25Z", "updated_at": "2026-11-29T10:00:00Z", "pushed_at": "2026-11-29T09:59:40Z",
		"size": 4182, "stargazers_count": 12, "watchers_count": 12, "language": "Go", "default_branch": "main",
		"open_issues_count": 7, "topics": []string{"payments", "checkout"}, "visibility": "private"}
	for _, u := range []string{"forks", "keys{/key_id}", "collaborators{/collaborator}", "teams", "hooks",
		"issues/events{/number}", "events", "assignees{/user}", "branches{/branch}", "tags", "git/blobs{/sha}",
		"git/tags{/sha}", "git/refs{/sha}", "git/trees{/sha}", "statuses/{sha}", "languages", "stargazers",
		"contributors", "subscribers", "subscription", "commits{/sha}", "git/commits{/sha}", "comments{/number}",
		"issues/comments{/number}", "contents/{+path}", "compare/{base}...{head}", "merges", "{archive_format}{/ref}",
		"downloads", "issues{/number}", "pulls{/number}", "milestones{/number}", "notifications{?since,all,participating}",
		"labels{/name}", "releases{/id}", "deployments"} {
		key := strings.NewReplacer("/", "_", "{", "", "}", "", "+", "", "?", "", ",", "", ".", "").Replace(u)
		repo[strings.SplitN(key, "_", 2)[0]+"_url"] = api + "/repos/acme/checkout/" + u
	}
	user := func(login string, id int) map[string]any {
		m := map[string]any{"login": login, "id": id, "node_id": fmt.Sprintf("MDQ6VXNlcj%07d", id), "type": "User",
			"avatar_url": fmt.Sprintf("https://avatars.githubusercontent.com/u/%d?v=4", id), "site_admin": false,
			"html_url": "https://github.com/" + login, "url": api + "/users/" + login}
		for _, u := range []string{"followers", "following{/other_user}", "gists{/gist_id}", "starred{/owner}{/repo}",
			"subscriptions", "organizations", "repos", "events{/privacy}", "received_events"} {
			m[strings.SplitN(strings.NewReplacer("{", "", "}", "", "/", "").Replace(u), "other", 2)[0]+"_url"] =
				api + "/users/" + login + "/" + u
		}
		return m
	}
	repo["owner"] = user("acme", 21031067)
	head := sha()
	payload := map[string]any{
		"action": "requested",
		"check_suite": map[string]any{"id": 5604861207, "node_id": "CS_kwDOCyMNCs8AAAABThsL1w", "head_branch": "main",
			"head_sha": head, "status": "queued", "conclusion": nil, "url": api + "/repos/acme/checkout/check-suites/5604861207",
			"before": sha(), "after": head, "pull_requests": []any{}, "created_at": "2026-11-29T10:00:00Z",
			"updated_at": "2026-11-29T10:00:00Z", "rerequestable": true, "runs_rerequestable": false,
			"latest_check_runs_count": 0, "check_runs_url": api + "/repos/acme/checkout/check-suites/5604861207/check-runs"},
		"repository":   repo,
		"organization": map[string]any{"login": "acme", "id": 21031067, "url": api + "/orgs/acme", "repos_url": api + "/orgs/acme/repos"},
		"sender":       user("octocat", 583231),
		"installation": map[string]any{"id": 1, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ=="},
	}
	words := strings.Fields("fix add remove update refactor checkout payment retry timeout handler config test " +
		"release rollback cache client server metrics log error guard window region canary wave")
	var commits []any
	last, _ := json.Marshal(payload)
	for {
		b, _ := json.Marshal(payload)
		if len(b) > n {
			return pad(last, n) // the last commit did not fit
		}
		last = b
		msg := make([]string, 4+rng.IntN(8))
		for i := range msg {
			msg[i] = words[rng.IntN(len(words))]
		}
		id := sha()
		commits = append(commits, map[string]any{"id": id, "tree_id": sha(), "distinct": true,
			"message": strings.Join(msg, " "), "timestamp": fmt.Sprintf("2026-11-29T09:%02d:%02dZ", rng.IntN(60), rng.IntN(60)),
			"url":    "https://github.com/acme/checkout/commit/" + id,
			"author": map[string]any{"name": "Mona Octocat", "email": "mona@acme.example", "username": "octocat"}})
		payload["commits"] = commits
	}
}

// pad brings a JSON object to n bytes with whitespace before its closing
// brace; an object already as long is returned as it is.
func pad(b []byte, n int) []byte {
	if len(b) >= n {
		return b
	}
	out := make([]byte, 0, n)
	out = append(out, b[:len(b)-1]...)
	out = append(out, strings.Repeat(" ", n-len(b))...)
	return append(out, '}')
}
