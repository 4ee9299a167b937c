package gates

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ripcord/ripcord/internal/outbound"
)

// PolicyValidation asks an external service whether the release may go
// (process.policy_validation). It POSTs the subject as JSON:
//
//	{"repository", "pull_request", "head_sha", "app", "environment",
//	 "cluster", "image", "digest", "git_revision", "labels"}
//
// and expects 200 with {"result": "pass"|"fail", "reason": "…"}. Anything
// else — a timeout, another status, another body — fails closed.
type PolicyValidation struct {
	URL     string
	Timeout time.Duration
	// Client sends the request; nil: outbound.Client(nil). The URL is the
	// repository's choice, so it must not be a way into the server's
	// network (see internal/outbound).
	Client *http.Client
}

// PolicyRequest is what the policy service receives.
type PolicyRequest struct {
	Repository  string   `json:"repository"`
	PullRequest int      `json:"pull_request"`
	HeadSHA     string   `json:"head_sha"`
	App         string   `json:"app"`
	Environment string   `json:"environment"`
	Cluster     string   `json:"cluster"`
	Image       string   `json:"image"`
	Digest      string   `json:"digest"`
	GitRevision string   `json:"git_revision"`
	Labels      []string `json:"labels"`
}

// PolicyResponse is what the policy service answers.
type PolicyResponse struct {
	Result string `json:"result"`
	Reason string `json:"reason"`
}

// maxPolicyResponse bounds how much of an answer is read.
const maxPolicyResponse = 1 << 20

// Name, Class, Slow and Evaluate implement Gate.
func (PolicyValidation) Name() string { return NamePolicyValidation }
func (PolicyValidation) Class() Class { return Process }
func (PolicyValidation) Slow() bool   { return true }
func (g PolicyValidation) Evaluate(ctx context.Context, s Subject) Verdict {
	if g.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.Timeout)
		defer cancel()
	}
	body, _ := json.Marshal(PolicyRequest{
		Repository: s.Repository, PullRequest: s.PullRequest, HeadSHA: s.HeadSHA, App: s.App, Environment: s.Environment,
		Cluster: s.Cluster, Image: s.ImageRef(), Digest: s.Digest, GitRevision: s.GitRevision, Labels: s.Labels,
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.URL, bytes.NewReader(body))
	if err != nil {
		return Errored(fmt.Sprintf("process.policy_validation.url %q: %v", g.URL, err))
	}
	req.Header.Set("Content-Type", "application/json")
	c := g.Client
	if c == nil {
		c = outbound.Client(nil)
	}
	resp, err := c.Do(req)
	if why, ok := outbound.Refused(err, "process.policy_validation.url"); ok {
		return Errored(fmt.Sprintf("policy service %s was not asked: %s", g.URL, why))
	}
	if err != nil {
		return Errored(fmt.Sprintf("policy service %s did not answer: %v", g.URL, err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxPolicyResponse))
	if err != nil {
		return Errored(fmt.Sprintf("policy service %s: read answer: %v", g.URL, err))
	}
	if why := outbound.Redirect(resp); why != "" {
		return Errored(fmt.Sprintf("policy service %s answered HTTP %d, %s", g.URL, resp.StatusCode, why))
	}
	if resp.StatusCode != http.StatusOK {
		return Errored(fmt.Sprintf("policy service %s answered HTTP %d", g.URL, resp.StatusCode))
	}
	var pr PolicyResponse
	if err := json.Unmarshal(raw, &pr); err != nil {
		return Errored(fmt.Sprintf(`policy service %s answered something other than {"result", "reason"}: %v`, g.URL, err))
	}
	// The reason is the check run's title, which is one line.
	pr.Reason = strings.Join(strings.Fields(pr.Reason), " ")
	switch pr.Result {
	case "pass":
		return Passed(orDefault(pr.Reason, "the policy service allowed the release"))
	case "fail":
		return Failed(orDefault(pr.Reason, "the policy service refused the release and gave no reason"))
	}
	return Errored(fmt.Sprintf(`policy service %s answered result %q; want "pass" or "fail"`, g.URL, pr.Result))
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
