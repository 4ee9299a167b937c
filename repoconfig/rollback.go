package repoconfig

import (
	"strings"

	"gopkg.in/yaml.v3"
)

var rollbackKeys = []string{
	"mode", "workflow", "input", "repository", "base", "file", "fields",
	"namespace", "deployment", "container",
}

// rollbackModeKeys says which keys each mode uses; a key of another mode is
// an error because it would be silently ignored, which is how configs rot.
var rollbackModeKeys = map[string][]string{
	ModeWorkflow:    {"workflow", "input", "repository"},
	ModePullRequest: {"repository", "base", "file", "fields"},
	ModeKubernetes:  {"namespace", "deployment", "container"},
}

func (d *decoder) rollback(f field) Rollback {
	var r Rollback
	m, ok := d.fields(f.Value, f.Path, rollbackKeys...)
	if !ok {
		return r
	}
	d.require(f.Value, f.Path, m, "mode")
	if v, ok := m["mode"]; ok {
		r.Mode, _ = d.enum(v, RollbackModes...)
	}
	d.rollbackStrings(m, &r)
	if v, ok := m["fields"]; ok {
		r.Fields = d.releaseFields(v)
	}
	if r.Mode == "" {
		return r
	}
	for _, k := range rollbackKeys[1:] {
		if v, ok := m[k]; ok && !contains(rollbackModeKeys[r.Mode], k) {
			d.problemf(v.Key, v.Path, "%s is not used by mode %s (it uses %s)",
				k, r.Mode, strings.Join(rollbackModeKeys[r.Mode], ", "))
		}
	}
	switch r.Mode {
	case ModeWorkflow:
		d.requireFor(f, m, r.Mode, "workflow", "input")
	case ModePullRequest:
		d.requireFor(f, m, r.Mode, "file")
		if _, ok := m["fields"]; !ok {
			d.problemf(f.Value, f.Path, "mode pull-request needs fields.image or fields.digest, the paths in the release file to change")
		} else if d.lacksImageAndDigest(m["fields"]) {
			v := m["fields"]
			d.problemf(v.Value, v.Path, "mode pull-request needs image or digest, the paths in the release file to change")
		}
	}
	return r
}

func (d *decoder) requireFor(f field, m map[string]field, mode string, keys ...string) {
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			d.problemf(f.Value, f.Path, "mode %s needs key %s", mode, k)
		}
	}
}

func (d *decoder) rollbackStrings(m map[string]field, r *Rollback) {
	type spec struct {
		key  string
		dst  *string
		re   interface{ MatchString(string) bool }
		what string
	}
	for _, s := range []spec{
		{"workflow", &r.Workflow, workflowFilePattern, "a workflow file name like deploy.yml"},
		{"input", &r.Input, nil, ""},
		{"repository", &r.Repository, repositoryPattern, "a repository like owner/name"},
		{"base", &r.Base, nil, ""},
		{"file", &r.File, relativePathPattern, "a path inside the repository, like apps/checkout/prod/release.yaml"},
		{"namespace", &r.Namespace, dnsLabelPattern, "a Kubernetes namespace name"},
		{"deployment", &r.Deployment, dnsSubdomainPattern, "a Kubernetes Deployment name"},
		{"container", &r.Container, dnsLabelPattern, "a Kubernetes container name"},
	} {
		v, ok := m[s.key]
		if !ok {
			continue
		}
		str, ok := d.str(v)
		if !ok {
			continue
		}
		if s.re != nil && !s.re.MatchString(str) {
			d.problemf(v.Value, v.Path, "%q is not %s", str, s.what)
			continue
		}
		if s.key == "deployment" && len(str) > maxSubdomainLength {
			d.problemf(v.Value, v.Path, "is longer than %d characters", maxSubdomainLength)
			continue
		}
		*s.dst = str
	}
}

func (d *decoder) releaseFields(f field) Fields {
	var out Fields
	m, ok := d.fields(f.Value, f.Path, "image", "digest", "release_id")
	if !ok {
		return out
	}
	const what = "a dotted path into the release file, like image.tag"
	if v, ok := m["image"]; ok {
		out.Image, _ = d.match(v, dottedPathPattern, what)
	}
	if v, ok := m["digest"]; ok {
		out.Digest, _ = d.match(v, dottedPathPattern, what)
	}
	if v, ok := m["release_id"]; ok {
		out.ReleaseID, _ = d.match(v, dottedPathPattern, what)
	}
	return out
}

// lacksImageAndDigest is true for a fields mapping naming neither path; a
// fields value that is not a mapping was reported already.
func (d *decoder) lacksImageAndDigest(f field) bool {
	if f.Value.Kind != yaml.MappingNode {
		return false
	}
	_, image := d.keyIn(f, "image")
	_, digest := d.keyIn(f, "digest")
	return !image && !digest
}
