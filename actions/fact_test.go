package actions

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ripcord/ripcord/records"
)

// decodeFact reads a posted body the way ripcord's API does (strict, into
// records.Fact) and checks the server would accept it.
func decodeFact(t *testing.T, body []byte) records.Fact {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var f records.Fact
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("posted body is not a fact ripcord accepts: %v\n%s", err, body)
	}
	if err := f.Validate(); err != nil {
		t.Fatalf("posted fact fails ripcord's validation: %v\n%s", err, body)
	}
	return f
}

func TestPostsTheTaskFact(t *testing.T) {
	t.Parallel()
	f := newFakes(t)
	before := time.Now().UTC().Truncate(time.Second)
	// A trailing slash on server must not end up in the URL or audience.
	r := runAction(t, f, with(baseInputs(f), "server", f.rcURL+"/"), nil)
	after := time.Now().UTC()
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}

	tok := f.token.got()
	if len(tok) != 1 {
		t.Fatalf("token endpoint got %d requests, want 1", len(tok))
	}
	if tok[0].Authorization != "bearer "+requestToken {
		t.Errorf("token request Authorization = %q, want the runner's request token", tok[0].Authorization)
	}
	if got := tok[0].Query["audience"]; !reflect.DeepEqual(got, []string{f.rcURL}) {
		t.Errorf("token audience = %q, want the server URL %q", got, f.rcURL)
	}
	if got := tok[0].Query["api-version"]; !reflect.DeepEqual(got, []string{"2.0"}) {
		t.Errorf("token request lost the URL's own query: api-version = %q", got)
	}

	posted := f.facts.got()
	if len(posted) != 1 {
		t.Fatalf("ripcord got %d posts, want 1", len(posted))
	}
	p := posted[0]
	if p.Authorization != "Bearer "+oidcToken || p.ContentType != "application/json" {
		t.Errorf("post Authorization %q Content-Type %q, want the OIDC bearer and application/json", p.Authorization, p.ContentType)
	}
	var got map[string]any
	dec := json.NewDecoder(bytes.NewReader(p.Body))
	dec.UseNumber()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("posted body is not JSON: %v\n%s", err, p.Body)
	}
	observed, _ := got["observed_at"].(string)
	delete(got, "observed_at")
	want := map[string]any{
		"source": "task", "repository": "acme/checkout",
		"workflow_run_id": json.Number("12345678901"), "run_attempt": json.Number("2"),
		"status": "success", "app": "checkout", "environment": "prod", "cluster": "prod-eu",
		"version": "v2", "release_id": "c1:prod-eu/prod", "images": []any{"ghcr.io/acme/checkout:v2"},
		"metadata": map[string]any{"commit": "4f9c2d1e8b7a6c5d4e3f2a1b0c9d8e7f6a5b4c3d", "actor": "octocat",
			"ref": "refs/heads/main", "workflow": "deploy", "job": "prod"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("posted fact\n got %v\nwant %v", got, want)
	}
	at, err := time.Parse(time.RFC3339, observed)
	if err != nil || !strings.HasSuffix(observed, "Z") || at.Before(before) || at.After(after) {
		t.Errorf("observed_at = %q, want RFC 3339 UTC between %s and %s", observed, before, after)
	}
	fact := decodeFact(t, p.Body)
	if fact.ID() == "" {
		t.Error("fact has no id")
	}

	wantOutputs := "fact-id=9c1f0e\noutcome=opened\nstate=opened\n"
	if r.outputs != wantOutputs {
		t.Errorf("GITHUB_OUTPUT =\n%s\nwant\n%s", r.outputs, wantOutputs)
	}
	if !strings.Contains(r.stdout, answer) {
		t.Errorf("stdout does not show ripcord's answer:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "::add-mask::"+oidcToken) {
		t.Error("the OIDC token is not masked in the log")
	}
	if left, _ := os.ReadDir(r.temp); len(left) != 0 {
		t.Errorf("RUNNER_TEMP still holds %v: the token files were not removed", left)
	}
}

func TestOptionalFieldsAreLeftOut(t *testing.T) {
	t.Parallel()
	f := newFakes(t)
	in := map[string]string{"server": f.rcURL, "app": "checkout", "environment": "staging",
		"status": "failed", "failure-type": "deploy_failure", "release-id": "c7:staging"}
	r := runAction(t, f, in, map[string]string{"GITHUB_ACTOR": "-", "GITHUB_JOB": "-"})
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var got map[string]any
	if err := json.Unmarshal(f.facts.got()[0].Body, &got); err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"cluster", "version", "images"} {
		if v, ok := got[absent]; ok {
			t.Errorf("%s = %v is posted though its input is empty", absent, v)
		}
	}
	if got["failure_type"] != "deploy_failure" {
		t.Errorf("failure_type = %v, want deploy_failure", got["failure_type"])
	}
	meta, _ := got["metadata"].(map[string]any)
	if _, ok := meta["actor"]; ok || meta["commit"] == nil {
		t.Errorf("metadata = %v, want commit but no actor (GITHUB_ACTOR unset)", meta)
	}
	decodeFact(t, f.facts.got()[0].Body)
}

func TestAudienceInputIsURLEncoded(t *testing.T) {
	t.Parallel()
	f := newFakes(t)
	aud := "https://ripcord.example.com/aud?team=a&b c/ü"
	r := runAction(t, f, with(baseInputs(f), "audience", aud), nil)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := f.token.got()[0].Query["audience"]; !reflect.DeepEqual(got, []string{aud}) {
		t.Errorf("audience = %q, want %q", got, aud)
	}
}

func TestValuesAreEscaped(t *testing.T) {
	t.Parallel()
	nasty := map[string]string{
		"app":          `quo"te\back\\slash`,
		"version":      "line1\nline2\r\n\ttabbed",
		"image":        "ghcr.io/acme/ünïcødé:✓-日本",
		"failure-type": "ctl\x01\x07\x1b\x1f\b\f end",
		"release-id":   `c1:prod/"x"`,
	}
	workflow := "deploy \"prod\" \\ 50% & ::warning::"
	for _, lang := range []string{"C.UTF-8", "C"} {
		t.Run("LANG="+lang, func(t *testing.T) {
			f := newFakes(t)
			in := with(baseInputs(f), "status", "failed")
			for k, v := range nasty {
				in[k] = v
			}
			r := runAction(t, f, in, map[string]string{"LANG": lang, "LC_ALL": lang, "GITHUB_WORKFLOW": workflow})
			if r.code != 0 || len(f.facts.got()) != 1 {
				t.Fatalf("exit %d, %d posts\n%s%s", r.code, len(f.facts.got()), r.stdout, r.stderr)
			}
			fact := decodeFact(t, f.facts.got()[0].Body)
			got := map[string]string{"app": fact.App, "version": fact.Version, "failure-type": fact.FailureType,
				"release-id": fact.ReleaseID}
			if len(fact.Images) == 1 {
				got["image"] = fact.Images[0]
			}
			if !reflect.DeepEqual(got, nasty) {
				t.Errorf("values came back as\n%q\nwant\n%q", got, nasty)
			}
			if fact.Metadata["workflow"] != workflow {
				t.Errorf("metadata.workflow = %q, want %q", fact.Metadata["workflow"], workflow)
			}
		})
	}
}
