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

func (c scanning) OpenAlerts(ctx context.Context, repository, sha string) ([]gates.Alert, error) {
	owner, name, _ := strings.Cut(repository, "/")
	ref, err := c.analysedRef(ctx, owner, name, sha)
	if err != nil {
		return nil, err
	}
	opts := &github.AlertListOptions{State: "open", Ref: ref, ListOptions: github.ListOptions{PerPage: 100}}
	var out []gates.Alert
	for {
		page, resp, err := c.gh.CodeScanning.ListAlertsForRepo(ctx, owner, name, opts)
		if err != nil {
			return nil, fmt.Errorf("list code-scanning alerts of %s at %s: %w", repository, ref, err)
		}
		for _, a := range page {
			loc := a.GetMostRecentInstance().GetLocation()
			out = append(out, gates.Alert{
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

// analysedRef finds the ref an analysis of sha was made on.
func (c scanning) analysedRef(ctx context.Context, owner, name, sha string) (string, error) {
	opts := &github.AnalysesListOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for range analysesPages {
		page, resp, err := c.gh.CodeScanning.ListAnalysesForRepo(ctx, owner, name, opts)
		if err != nil {
			return "", fmt.Errorf("list code-scanning analyses of %s/%s: %w", owner, name, err)
		}
		for _, a := range page {
			if a.GetCommitSHA() == sha && a.GetRef() != "" {
				return a.GetRef(), nil
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opts.ListOptions.Page = resp.NextPage
	}
	return "", fmt.Errorf("no code-scanning analysis of commit %s among the newest %d of %s/%s: run code scanning on it", sha, analysesPages*100, owner, name)
}
