package gates

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestITSM(t *testing.T) {
	g := ITSM{BodyField: `CHG[0-9]{7}`}
	cases := []struct {
		name string
		body string
		want Outcome
	}{
		{"change reference in the body", "Deploys 1.4.\n\nChange: CHG0012345", Pass},
		{"no change reference", "Deploys 1.4.", Fail},
		{"reference too short to be a change number", "CHG123", Fail},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if v := g.Evaluate(context.Background(), Subject{Body: c.body}); v.Outcome != c.want {
				t.Fatalf("outcome %s, want %s (%s)", v.Outcome, c.want, v.Summary)
			}
		})
	}
	if v := (ITSM{BodyField: "("}).Evaluate(context.Background(), Subject{Body: "x"}); v.Outcome != Error {
		t.Fatalf("a broken body_field must fail closed as an error, got %s", v.Outcome)
	}
}

func TestQA(t *testing.T) {
	g := QA{Labels: []string{"qa-approved", "qa-waived"}}
	if v := g.Evaluate(context.Background(), Subject{Labels: []string{"release", "qa-waived"}}); v.Outcome != Pass {
		t.Fatalf("one of the labels present: %s", v.Summary)
	}
	v := g.Evaluate(context.Background(), Subject{Labels: []string{"qa"}})
	if v.Outcome != Fail || !strings.Contains(v.Summary, `"qa-approved"`) {
		t.Fatalf("missing label: %+v", v)
	}
}

func TestPolicyValidation(t *testing.T) {
	// stop lets the slow handler go when the test ends, whatever the
	// server notices of the client giving up.
	var stop chan struct{}
	cases := []struct {
		name    string
		handler http.HandlerFunc
		want    Outcome
		summary string
	}{
		{"service allows", func(w http.ResponseWriter, r *http.Request) {
			var req PolicyRequest
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Digest != newDigest || req.Environment != "prod" {
				http.Error(w, "bad request", http.StatusBadRequest)
				return
			}
			_, _ = w.Write([]byte(`{"result":"pass","reason":"prod window open"}`))
		}, Pass, "prod window open"},
		{"service refuses with a reason", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"result":"fail","reason":"change freeze until Monday"}`))
		}, Fail, "change freeze until Monday"},
		// The reason becomes the check run's one-line title.
		{"a reason on several lines is read as one", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"result":"fail","reason":"change freeze\n\tuntil Monday\r\n"}`))
		}, Fail, "change freeze until Monday"},
		{"service errors: fails closed", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "boom", http.StatusBadGateway)
		}, Error, "HTTP 502"},
		{"service answers nonsense: fails closed", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"result":"maybe"}`))
		}, Error, `"maybe"`},
		{"service too slow: fails closed", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-stop:
			}
		}, Error, "did not answer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stop = make(chan struct{})
			srv := httptest.NewServer(c.handler)
			defer srv.Close()
			defer close(stop)
			g := PolicyValidation{URL: srv.URL, Timeout: 200 * time.Millisecond, Client: srv.Client()}
			v := g.Evaluate(context.Background(), Subject{Environment: "prod", Image: "reg/app", Digest: newDigest})
			if v.Outcome != c.want || !strings.Contains(v.Summary, c.summary) {
				t.Fatalf("got %s %q, want %s containing %q", v.Outcome, v.Summary, c.want, c.summary)
			}
		})
	}
}

type fakeCommits struct {
	verified bool
	reason   string
	err      error
	asked    string
}

func (f *fakeCommits) CommitVerification(_ context.Context, repo, sha string) (bool, string, error) {
	f.asked = repo + "@" + sha
	return f.verified, f.reason, f.err
}

func TestCommitSigning(t *testing.T) {
	s := Subject{Repository: "acme/checkout", GitRevision: "abcdef0123456789abcdef0123456789abcdef01"}
	cases := []struct {
		name string
		gh   *fakeCommits
		s    Subject
		want Outcome
	}{
		{"verified commit", &fakeCommits{verified: true, reason: "valid"}, s, Pass},
		{"unsigned commit", &fakeCommits{reason: "unsigned"}, s, Fail},
		{"GitHub down: fails closed", &fakeCommits{err: errors.New("502 Bad Gateway")}, s, Error},
		{"revision unknown: fails closed", &fakeCommits{verified: true}, Subject{Repository: "acme/checkout"}, Error},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := CommitSigning{GitHub: c.gh}.Evaluate(context.Background(), c.s)
			if v.Outcome != c.want {
				t.Fatalf("outcome %s, want %s (%s)", v.Outcome, c.want, v.Summary)
			}
		})
	}
}

// GitHub's label names are case-insensitive (a repository cannot have both
// "QA-Approved" and "qa-approved"): the label the repository spells
// QA-Approved is the one the config names qa-approved.
func TestQALabelsAreCaseInsensitive(t *testing.T) {
	g := QA{Labels: []string{"qa-approved"}}
	if v := g.Evaluate(context.Background(), Subject{Labels: []string{"QA-Approved"}}); v.Outcome != Pass {
		t.Fatalf("the label spelled QA-Approved: %s %q, want pass", v.Outcome, v.Summary)
	}
	if !g.Names("QA-APPROVED") || g.Names("qa") {
		t.Error("Names does not match label names as GitHub does, case-insensitively and whole")
	}
}
