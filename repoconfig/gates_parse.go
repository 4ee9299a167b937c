package repoconfig

import (
	"regexp"

	"gopkg.in/yaml.v3"
)

var gateKeys = []string{"branches", "provenance", "values", "commit_signing", "sast", "sbom", "image_scan", "process"}

func (d *decoder) gates(f field) Gates {
	var g Gates
	m, ok := d.fields(f.Value, f.Path, gateKeys...)
	if !ok {
		return g
	}
	if v, ok := m["branches"]; ok {
		g.Branches = d.strings(v, d.glob)
	}
	if v, ok := m["provenance"]; ok {
		g.Provenance = d.provenance(v)
	}
	if v, ok := m["values"]; ok {
		if vm, ok := d.fields(v.Value, v.Path, "schema"); ok {
			g.Values = &Values{}
			d.require(v.Value, v.Path, vm, "schema")
			if s, ok := vm["schema"]; ok {
				g.Values.Schema, _ = d.match(s, relativePathPattern, "a path inside the repository")
			}
		}
	}
	if v, ok := m["commit_signing"]; ok {
		if b, ok := d.boolean(v); ok {
			g.CommitSigning = &b
		}
	}
	if v, ok := m["sast"]; ok {
		if vm, ok := d.fields(v.Value, v.Path, "severity"); ok {
			g.SAST = &SAST{}
			if s, ok := vm["severity"]; ok {
				g.SAST.Severity, _ = d.enum(s, SASTSeverities...)
			}
		}
	}
	if v, ok := m["sbom"]; ok {
		g.SBOM = d.sbom(v)
	}
	if v, ok := m["image_scan"]; ok {
		g.ImageScan = d.imageScan(v)
	}
	if v, ok := m["process"]; ok {
		g.Process = d.process(v)
	}
	return g
}

func (d *decoder) provenance(f field) *Provenance {
	m, ok := d.fields(f.Value, f.Path, "keys", "identities", "trusted_root", "builder_id", "source_repository")
	if !ok {
		return nil
	}
	p := &Provenance{}
	if v, ok := m["keys"]; ok {
		p.Keys = d.strings(v, nil)
	}
	if v, ok := m["identities"]; ok {
		d.list(v, func(item field) {
			p.Identities = append(p.Identities, d.identity(item))
		})
	}
	if v, ok := m["trusted_root"]; ok {
		p.TrustedRoot, _ = d.match(v, relativePathPattern, "a path inside the repository")
	}
	if v, ok := m["builder_id"]; ok {
		p.BuilderID, _ = d.str(v)
	}
	if v, ok := m["source_repository"]; ok {
		p.SourceRepository, _ = d.str(v)
	}
	return p
}

func (d *decoder) identity(f field) Identity {
	var id Identity
	m, ok := d.fields(f.Value, f.Path, "issuer", "subject_regexp")
	if !ok {
		return id
	}
	d.require(f.Value, f.Path, m, "issuer", "subject_regexp")
	if v, ok := m["issuer"]; ok {
		id.Issuer, _ = d.match(v, httpsURLPattern, "an https:// URL")
	}
	if v, ok := m["subject_regexp"]; ok {
		id.SubjectRegexp, _ = d.regexp(v)
	}
	return id
}

func (d *decoder) regexp(f field) (string, bool) {
	s, ok := d.str(f)
	if !ok {
		return "", false
	}
	if _, err := regexp.Compile(s); err != nil {
		d.problemf(f.Value, f.Path, "invalid regular expression: %v", err)
		return "", false
	}
	return s, true
}

func (d *decoder) sbom(f field) *SBOM {
	m, ok := d.fields(f.Value, f.Path, "formats")
	if !ok {
		return nil
	}
	s := &SBOM{}
	if v, ok := m["formats"]; ok {
		s.Formats = d.strings(v, func(item field) (string, bool) { return d.enum(item, SBOMFormats...) })
		if len(v.Value.Content) == 0 && v.Value.Kind == yaml.SequenceNode {
			d.problemf(v.Value, v.Path, "must name at least one of %s", joinOr(SBOMFormats))
		}
	}
	return s
}

func (d *decoder) imageScan(f field) *ImageScan {
	m, ok := d.fields(f.Value, f.Path, "severity", "allow")
	if !ok {
		return nil
	}
	s := &ImageScan{}
	if v, ok := m["severity"]; ok {
		s.Severity, _ = d.enum(v, ImageScanSeverities...)
	}
	if v, ok := m["allow"]; ok {
		s.Allow = d.strings(v, func(item field) (string, bool) {
			return d.match(item, vulnerabilityPattern, "a vulnerability id like CVE-2024-3094 or GHSA-xxxx-xxxx-xxxx")
		})
	}
	return s
}

func (d *decoder) process(f field) Process {
	var p Process
	m, ok := d.fields(f.Value, f.Path, "itsm", "qa", "policy_validation")
	if !ok {
		return p
	}
	if v, ok := m["itsm"]; ok {
		if vm, ok := d.fields(v.Value, v.Path, "body_field"); ok {
			p.ITSM = &ITSM{}
			d.require(v.Value, v.Path, vm, "body_field")
			if s, ok := vm["body_field"]; ok {
				p.ITSM.BodyField, _ = d.regexp(s)
			}
		}
	}
	if v, ok := m["qa"]; ok {
		if vm, ok := d.fields(v.Value, v.Path, "labels"); ok {
			p.QA = &QA{}
			d.require(v.Value, v.Path, vm, "labels")
			if s, ok := vm["labels"]; ok {
				p.QA.Labels = d.strings(s, nil)
				if s.Value.Kind == yaml.SequenceNode && len(s.Value.Content) == 0 {
					d.problemf(s.Value, s.Path, "must name at least one label")
				}
			}
		}
	}
	if v, ok := m["policy_validation"]; ok {
		if vm, ok := d.fields(v.Value, v.Path, "url", "timeout"); ok {
			p.PolicyValidation = &PolicyValidation{}
			d.require(v.Value, v.Path, vm, "url")
			if s, ok := vm["url"]; ok {
				p.PolicyValidation.URL, _ = d.match(s, httpURLPattern, "an http:// or https:// URL")
			}
			if s, ok := vm["timeout"]; ok {
				p.PolicyValidation.Timeout, _ = d.duration(s, true)
			}
		}
	}
	return p
}
