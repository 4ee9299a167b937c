package gatesflow

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/gates"
	"github.com/ripcord/ripcord/internal/ghlimit"
)

// rateLimits keeps the first rate limit the gates' GitHub reads met. Such
// a read is GitHub's "later", not "no": the gate's Errored verdict would
// fail a change nothing is wrong with. The evaluation writes no verdict
// then and returns the limit as its error, and its job waits for it to
// lift (pipeline.LimitSnooze) and evaluates again. Any other error stays
// the gate's, which fails closed on it.
type rateLimits struct {
	mu  sync.Mutex
	err error
}

// note keeps err when it is a rate limit, and returns it.
func (l *rateLimits) note(err error) error {
	if l != nil && ghlimit.Limited(err) {
		l.mu.Lock()
		if l.err == nil {
			l.err = err
		}
		l.mu.Unlock()
	}
	return err
}

// met is the rate limit a read met, if any.
func (l *rateLimits) met() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// commits adapts go-github to gates.CommitVerifier.
type commits struct {
	gh     *github.Client
	limits *rateLimits
}

func (c commits) CommitVerification(ctx context.Context, repository, sha string) (bool, string, error) {
	owner, name, _ := strings.Cut(repository, "/")
	rc, _, err := c.gh.Repositories.GetCommit(ctx, owner, name, sha, nil)
	if err != nil {
		return false, "", c.limits.note(fmt.Errorf("get commit %s of %s: %w", sha, repository, err))
	}
	v := rc.GetCommit().GetVerification()
	return v.GetVerified(), v.GetReason(), nil
}

// scanning adapts go-github to gates.CodeScanning.
type scanning struct {
	gh     *github.Client
	limits *rateLimits
}

func (c scanning) OpenAlerts(ctx context.Context, repository, sha string) (gates.Scan, error) {
	scan, err := c.openAlerts(ctx, repository, sha)
	return scan, c.limits.note(err)
}

func (c scanning) openAlerts(ctx context.Context, repository, sha string) (gates.Scan, error) {
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
