package gatesflow

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/gates"
)

// commits adapts go-github to gates.CommitVerifier.
type commits struct{ gh *github.Client }

func (c commits) CommitVerification(ctx context.Context, repository, sha string) (bool, string, error) {
	owner, name, _ := strings.Cut(repository, "/")
	rc, _, err := c.gh.Repositories.GetCommit(ctx, owner, name, sha, nil)
	if err != nil {
		return false, "", fmt.Errorf("get commit %s of %s: %w", sha, repository, err)
	}
	v := rc.GetCommit().GetVerification()
	return v.GetVerified(), v.GetReason(), nil
}

// scanning adapts go-github to gates.CodeScanning.
type scanning struct{ gh *github.Client }

func (c scanning) OpenAlerts(ctx context.Context, repository, sha string) (gates.Scan, error) {
	owner, name, _ := strings.Cut(repository, "/")
	ref, newest, err := c.analysedRef(ctx, owner, name, sha)
	if err != nil {
		return gates.Scan{}, err
	}
	opts := &github.AlertListOptions{State: "open", Ref: ref, ListOptions: github.ListOptions{PerPage: 100}}
	out := gates.Scan{Ref: ref, Newest: newest}
	for {
		page, resp, err := c.gh.CodeScanning.ListAlertsForRepo(ctx, owner, name, opts)
		if err != nil {
			return gates.Scan{}, fmt.Errorf("list code-scanning alerts of %s at %s: %w", repository, ref, err)
		}
		for _, a := range page {
			loc := a.GetMostRecentInstance().GetLocation()
			out.Alerts = append(out.Alerts, gates.Alert{
				Number: a.GetNumber(), RuleID: a.GetRule().GetID(), Severity: a.GetRule().GetSeverity(),
				SecuritySeverity: a.GetRule().GetSecuritySeverityLevel(), Description: a.GetRule().GetDescription(),
				Tool: a.GetTool().GetName(), Path: loc.GetPath(), Line: loc.GetStartLine(), URL: a.GetHTMLURL(),
			})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.ListOptions.Page = resp.NextPage
	}
}

// analysesPages bounds the search for a commit's analysis: GitHub lists
// analyses newest first, and a release's commit is a recent one.
const analysesPages = 3

// analysedRef finds the ref an analysis of sha was made on, and the
// commit of that ref's newest analysis, whose alerts GitHub lists for it.
func (c scanning) analysedRef(ctx context.Context, owner, name, sha string) (ref, newest string, err error) {
	opts := &github.AnalysesListOptions{ListOptions: github.ListOptions{PerPage: 100}}
	newestOf := map[string]string{} // ref: the commit of its newest analysis
	for range analysesPages {
		page, resp, err := c.gh.CodeScanning.ListAnalysesForRepo(ctx, owner, name, opts)
		if err != nil {
			return "", "", fmt.Errorf("list code-scanning analyses of %s/%s: %w", owner, name, err)
		}
		for _, a := range page {
			if a.GetRef() == "" {
				continue
			}
			if _, ok := newestOf[a.GetRef()]; !ok {
				newestOf[a.GetRef()] = a.GetCommitSHA() // newest first
			}
			if a.GetCommitSHA() == sha {
				return a.GetRef(), newestOf[a.GetRef()], nil
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opts.ListOptions.Page = resp.NextPage
	}
	return "", "", fmt.Errorf("no code-scanning analysis of commit %s among the newest %d of %s/%s: run code scanning on it", sha, analysesPages*100, owner, name)
}
