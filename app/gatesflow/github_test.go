package gatesflow

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/gates"
	"github.com/ripcord/ripcord/internal/githubtest"
)

func fakeGitHub(t *testing.T) (*githubtest.Server, *github.Client) {
	s := githubtest.NewServer(t)
	gh, err := github.NewClient(nil).WithEnterpriseURLs(s.URL(), s.URL())
	if err != nil {
		t.Fatal(err)
	}
	return s, gh
}

func TestSASTReadsOpenAlertsAtTheRevision(t *testing.T) {
	t.Parallel()
	s, gh := fakeGitHub(t)
	const rev = "abcdef0123456789abcdef0123456789abcdef01"
	cs := githubtest.ServeCodeScanning(s)
	var alerts []githubtest.CodeScanningAlert
	for range 120 { // more than a page: every page is read
		alerts = append(alerts, githubtest.CodeScanningAlert{RuleID: "go/unused", Severity: "note"})
	}
	alerts = append(alerts, githubtest.CodeScanningAlert{RuleID: "go/sql-injection", Severity: "error", SecuritySeverity: "high",
		Description: "SQL query built from user input", Path: "db.go", Line: 42},
		githubtest.CodeScanningAlert{RuleID: "go/xss", SecuritySeverity: "critical", State: "dismissed"})
	cs.Analyzed("acme/checkout", "refs/heads/main", alerts...)
	cs.AnalyzedCommit("acme/checkout", "refs/heads/main", rev)

	v := gates.SAST{GitHub: scanning{gh: gh}, Severity: "high"}.Evaluate(context.Background(), gates.Subject{Repository: "acme/checkout", GitRevision: rev})
	if v.Outcome != gates.Fail || len(v.Findings) != 1 || v.Findings[0].ID != "go/sql-injection" {
		t.Fatalf("verdict %s %q %+v, want the one open high alert, which is on the second page", v.Outcome, v.Summary, v.Findings)
	}
	for _, r := range s.Requests() {
		if r.Invalid != "" {
			t.Errorf("%s %s: GitHub would reject: %s", r.Method, r.Path, r.Invalid)
		}
		// GitHub lists alerts by ref, not commit: the ref comes from the
		// analysis of the release's revision.
		if strings.HasSuffix(r.Path, "/alerts") && (r.Query.Get("ref") != "refs/heads/main" || r.Query.Get("state") != "open") {
			t.Errorf("%s asked ref=%q state=%q, want the analysed ref and open", r.Path, r.Query.Get("ref"), r.Query.Get("state"))
		}
	}
}

// GitHub lists a ref's alerts as of its newest analysis: once the branch
// moved past the release's commit (a rollback's, an older release's), the
// alerts are a later commit's, and the check run says so instead of
// putting them on the release's commit, which it did.
func TestSASTSaysWhichCommitTheAlertsAreOf(t *testing.T) {
	t.Parallel()
	s, gh := fakeGitHub(t)
	const rev, later = "abcdef0123456789abcdef0123456789abcdef01", "5ca1ab1e5ca1ab1e5ca1ab1e5ca1ab1e5ca1ab1e"
	cs := githubtest.ServeCodeScanning(s)
	cs.AnalyzedCommit("acme/checkout", "refs/heads/main", rev)
	cs.AnalyzedCommit("acme/checkout", "refs/heads/feature", "0123456789012345678901234567890123456789")
	cs.AnalyzedCommit("acme/checkout", "refs/heads/main", later)
	cs.Analyzed("acme/checkout", "refs/heads/main", githubtest.CodeScanningAlert{RuleID: "go/sql-injection", SecuritySeverity: "high"})
	subject := gates.Subject{Repository: "acme/checkout", GitRevision: rev}
	v := gates.SAST{GitHub: scanning{gh: gh}, Severity: "high"}.Evaluate(context.Background(), subject)
	want := "on refs/heads/main as of its newest analysis, of commit 5ca1ab1e5ca1, not of the release's commit abcdef012345"
	if v.Outcome != gates.Fail || !strings.Contains(v.Summary, want) {
		t.Fatalf("verdict %s %q, want the alert of main's newest analysis, saying %q", v.Outcome, v.Summary, want)
	}
	// The release's commit is the branch's newest analysis: its alerts are its own.
	subject.GitRevision = later
	v = gates.SAST{GitHub: scanning{gh: gh}, Severity: "high"}.Evaluate(context.Background(), subject)
	if want := "in acme/checkout at 5ca1ab1e5ca1"; v.Outcome != gates.Fail || !strings.HasSuffix(v.Summary, want) {
		t.Fatalf("verdict %s %q, want it to end %q", v.Outcome, v.Summary, want)
	}
	for _, r := range s.Requests() {
		if r.Invalid != "" {
			t.Errorf("%s %s: GitHub would reject: %s", r.Method, r.Path, r.Invalid)
		}
	}
}

// Another commit's analysis on the same branch is not this commit's.
func TestSASTNeedsAnAnalysisOfTheRevisionItself(t *testing.T) {
	t.Parallel()
	s, gh := fakeGitHub(t)
	cs := githubtest.ServeCodeScanning(s)
	cs.Analyzed("acme/checkout", "refs/heads/main")
	cs.AnalyzedCommit("acme/checkout", "refs/heads/main", "1111111111111111111111111111111111111111")
	v := gates.SAST{GitHub: scanning{gh: gh}, Severity: "high"}.Evaluate(context.Background(),
		gates.Subject{Repository: "acme/checkout", GitRevision: "2222222222222222222222222222222222222222"})
	if v.Outcome != gates.Error || !strings.Contains(v.Summary, "no code-scanning analysis of commit 2222") {
		t.Fatalf("verdict %s %q, want error naming the unanalysed commit", v.Outcome, v.Summary)
	}
}

// The commit lives in the release's source repository, not the GitOps
// repository the PR changes.
func TestSASTReadsTheSourceRepository(t *testing.T) {
	t.Parallel()
	s, gh := fakeGitHub(t)
	const rev = "abcdef0123456789abcdef0123456789abcdef01"
	cs := githubtest.ServeCodeScanning(s)
	cs.Analyzed("acme/checkout-src", "refs/heads/main")
	cs.AnalyzedCommit("acme/checkout-src", "refs/heads/main", rev)
	v := gates.SAST{GitHub: scanning{gh: gh}, Severity: "high"}.Evaluate(context.Background(),
		gates.Subject{Repository: "acme/gitops", SourceRepository: "acme/checkout-src", GitRevision: rev})
	if v.Outcome != gates.Pass {
		t.Fatalf("verdict %s %q, want a clean analysis of acme/checkout-src", v.Outcome, v.Summary)
	}
}

func TestSASTWithoutAnalysisFailsClosed(t *testing.T) {
	t.Parallel()
	s, gh := fakeGitHub(t)
	githubtest.ServeCodeScanning(s)
	v := gates.SAST{GitHub: scanning{gh: gh}, Severity: "high"}.Evaluate(context.Background(), gates.Subject{Repository: "acme/checkout", GitRevision: "abcdef01"})
	if v.Outcome != gates.Error || !strings.Contains(v.Summary, "no code-scanning analysis of commit") {
		t.Fatalf("verdict %s %q, want error: no analysis is no data, not a clean bill", v.Outcome, v.Summary)
	}
}

// A gate's run is found by name and external id, which anyone who reads
// the commit's check runs can copy. A run that a workflow's token or
// another App made is not this evaluation's: it must not stop ripcord from
// showing its own run, and a newer one must not hide ripcord's own from
// GitHub's filter=latest (the verdict would then not complete it).
func TestFindRunIgnoresAnotherAppsRun(t *testing.T) {
	t.Parallel()
	s, gh := fakeGitHub(t)
	const repo, sha = "acme/checkout", "abcdef0123456789abcdef0123456789abcdef01"
	a := ReportArgs{Repository: repo, HeadSHA: sha, InstallationID: githubtest.InstallationID, ExternalID: "acme/checkout#7@abcdef checkout/prod t",
		Name: gates.CheckName(gates.NameProvenance), Status: "in_progress", Title: "evaluating"}
	s.AddCheckRun(repo, githubtest.CheckRun{Name: a.Name, HeadSHA: sha, ExternalID: a.ExternalID, Status: "in_progress", AppSlug: "github-actions"})
	ctx := context.Background()
	if err := showInProgress(ctx, gh, appOnly(), a, 0); err != nil {
		t.Fatal(err)
	}
	var own int64
	for _, cr := range s.CheckRuns(repo) {
		if cr.AppSlug == "" {
			own = cr.ID
		}
	}
	if own == 0 {
		t.Fatalf("no in_progress run of ripcord's own: another App's run of the same name and external id was taken for it")
	}
	s.AddCheckRun(repo, githubtest.CheckRun{Name: a.Name, HeadSHA: sha, ExternalID: a.ExternalID, Conclusion: "success", AppSlug: "github-actions"})
	got, _, _, err := findRun(ctx, gh, githubtest.AppID, "acme", "checkout", a)
	if err != nil || got.GetID() != own {
		t.Errorf("findRun = %d (%v), want ripcord's own run %d", got.GetID(), err, own)
	}
}

// Two evaluations of one gate on one commit (a re-run, or two releases of
// the commit) each find their own run by its external id. GitHub's default
// filter=latest lists only the newest run of the name, so the newer
// evaluation's run hid the older one's: its verdict found nothing, created
// a second run and left its in_progress run spinning. Runs past the first
// page of the list are found too.
func TestFindRunFindsEachEvaluationsOwnRun(t *testing.T) {
	t.Parallel()
	s, gh := fakeGitHub(t)
	ctx := context.Background()
	const repo, sha = "acme/checkout", "abcdef0123456789abcdef0123456789abcdef01"
	evaluation := func(trigger string) ReportArgs {
		return ReportArgs{Repository: repo, HeadSHA: sha, InstallationID: githubtest.InstallationID,
			ExternalID: "acme/checkout#7@" + sha + " checkout/prod " + trigger,
			Name:       gates.CheckName(gates.NameProvenance), Status: "in_progress", Title: "evaluating"}
	}
	first := evaluation("pull_request opened")
	if err := showInProgress(ctx, gh, appOnly(), first, 0); err != nil {
		t.Fatal(err)
	}
	runs := s.CheckRuns(repo)
	if len(runs) != 1 {
		t.Fatalf("%d runs after the first evaluation, want 1", len(runs))
	}
	own := runs[0].ID
	for i := range 120 {
		if err := showInProgress(ctx, gh, appOnly(), evaluation(fmt.Sprintf("check_run rerequested %d", i)), 0); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(s.CheckRuns(repo)); n != 121 {
		t.Fatalf("%d runs after 121 evaluations, want one each", n)
	}
	got, _, _, err := findRun(ctx, gh, githubtest.AppID, "acme", "checkout", first)
	if err != nil || got.GetID() != own {
		t.Fatalf("findRun = %d (%v), want the first evaluation's run %d", got.GetID(), err, own)
	}
	if err := showInProgress(ctx, gh, appOnly(), first, 0); err != nil {
		t.Fatal(err)
	}
	if n := len(s.CheckRuns(repo)); n != 121 {
		t.Errorf("%d runs: the first evaluation's retried job made a second run", n)
	}
}

// appOnly is the dependencies showInProgress needs of a report without a
// scope (no claim to take): the App's identity.
func appOnly() pipeline.Deps {
	return pipeline.Deps{App: func() pipeline.AppIdentity { return pipeline.AppIdentity{Configured: true, ID: githubtest.AppID} }}
}
