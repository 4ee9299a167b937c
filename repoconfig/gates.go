package repoconfig

import "time"

// Gates configures the gate check runs of an app or environment. A nil field
// (or nil Branches) was not set: at the app level the gate is off, at the
// environment level the app's setting stands.
type Gates struct {
	// Branches are the globs of release branches whose PRs the gates run on.
	Branches      []string
	Provenance    *Provenance
	Values        *Values
	CommitSigning *bool
	SAST          *SAST
	SBOM          *SBOM
	ImageScan     *ImageScan
	Process       Process
}

// Provenance verifies the image's signature and provenance attestation.
type Provenance struct {
	Keys             []string
	Identities       []Identity
	TrustedRoot      string
	BuilderID        string
	SourceRepository string
}

// Identity is a keyless signer: the OIDC issuer and a regexp of the subject.
type Identity struct {
	Issuer        string
	SubjectRegexp string
}

// Values validates the release file against a JSON Schema in the repository.
type Values struct {
	Schema string
}

// SAST fails on findings at or above Severity.
type SAST struct {
	Severity string
}

// SBOM requires an SBOM attestation in one of Formats.
type SBOM struct {
	Formats []string
}

// ImageScan fails on vulnerabilities at or above Severity, except Allow.
type ImageScan struct {
	Severity string
	Allow    []string
}

// Process holds the process gates; each is its own check run, so an
// environment overrides them one by one.
type Process struct {
	ITSM             *ITSM
	QA               *QA
	PolicyValidation *PolicyValidation
}

// ITSM requires a change reference matching BodyField in the PR body.
type ITSM struct {
	BodyField string
}

// QA requires one of Labels on the PR.
type QA struct {
	Labels []string
}

// PolicyValidation asks an external policy service at URL.
type PolicyValidation struct {
	URL     string
	Timeout time.Duration
}

// Enumerations the gates accept, in the order messages list them.
var (
	SASTSeverities      = []string{"error", "high", "medium", "low", "note"}
	ImageScanSeverities = []string{"critical", "high", "medium", "low"}
	SBOMFormats         = []string{"spdx", "cyclonedx"}
)

// over returns g with every gate that o sets replaced by o's.
func (g Gates) over(o Gates) Gates {
	if o.Branches != nil {
		g.Branches = o.Branches
	}
	if o.Provenance != nil {
		g.Provenance = o.Provenance
	}
	if o.Values != nil {
		g.Values = o.Values
	}
	if o.CommitSigning != nil {
		g.CommitSigning = o.CommitSigning
	}
	if o.SAST != nil {
		g.SAST = o.SAST
	}
	if o.SBOM != nil {
		g.SBOM = o.SBOM
	}
	if o.ImageScan != nil {
		g.ImageScan = o.ImageScan
	}
	if o.Process.ITSM != nil {
		g.Process.ITSM = o.Process.ITSM
	}
	if o.Process.QA != nil {
		g.Process.QA = o.Process.QA
	}
	if o.Process.PolicyValidation != nil {
		g.Process.PolicyValidation = o.Process.PolicyValidation
	}
	return g
}

// GatesFor returns the gates of app in env: the app's gates with the
// environment's overrides, gate by gate. False when app or env is unknown.
func (c *Config) GatesFor(app, env string) (Gates, bool) {
	a, ok := c.Apps[app]
	if !ok {
		return Gates{}, false
	}
	e, ok := a.Environments[env]
	if !ok {
		return Gates{}, false
	}
	return a.Gates.over(e.Gates), true
}
