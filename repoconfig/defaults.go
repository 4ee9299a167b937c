package repoconfig

import "time"

// Defaults, in one place. The recovery defaults are seed 000's
// (MAX_RETRIES=3, INITIAL_BACKOFF=10, BACKOFF_MULTIPLIER=2, MAX_BACKOFF=300).
const (
	DefaultMaxRetries     = 3
	DefaultInitialBackoff = 10 * time.Second
	DefaultMultiplier     = 2.0
	DefaultMaxBackoff     = 5 * time.Minute

	// DefaultCommandPermission is needed for every command unless commands: says otherwise.
	DefaultCommandPermission = PermissionWrite

	DefaultEligibilityWindow = 5
	// DefaultStallAfter is the server's stall_after default. A file that
	// leaves stall_after out keeps Config.StallAfter zero and its releases
	// take the server's setting, whatever the server was given.
	DefaultStallAfter = 15 * time.Minute

	DefaultSASTSeverity            = "error"
	DefaultImageScanSeverity       = "critical"
	DefaultPolicyValidationTimeout = 30 * time.Second
)

// DefaultSBOMFormats accepts any SBOM format ripcord can read.
var DefaultSBOMFormats = []string{"spdx", "cyclonedx"}

// maxEligibilityWindow bounds how many records per environment must be kept
// past retention for eligibility.
const maxEligibilityWindow = 100

// DefaultRecovery is the recovery policy of a file without a recovery section.
// No failure types are predefined: a repository names its own build and test jobs.
func DefaultRecovery() Recovery {
	return Recovery{
		MaxRetries:     DefaultMaxRetries,
		InitialBackoff: DefaultInitialBackoff,
		Multiplier:     DefaultMultiplier,
		MaxBackoff:     DefaultMaxBackoff,
		FailureTypes:   map[string][]string{},
	}
}

// applyDefaults fills every setting the file left out but stall_after,
// whose default is the server's. Only values that
// parsed cleanly reach here, and a zero value always means "not set" because
// validation rejects the zero of each setting defaulted this way.
func applyDefaults(cfg *Config, top *RecoveryOverride) {
	cfg.Recovery = DefaultRecovery().apply(top)
	for _, p := range []*Permission{&cfg.Commands.Retry, &cfg.Commands.Rollback, &cfg.Commands.Approve} {
		if *p == "" {
			*p = DefaultCommandPermission
		}
	}
	if cfg.Eligibility.Window == 0 {
		cfg.Eligibility.Window = DefaultEligibilityWindow
	}
	for name, app := range cfg.Apps {
		defaultGates(&app.Gates)
		for _, env := range app.Environments {
			defaultGates(&env.Gates)
			if env.Rollback.Mode == ModeKubernetes {
				// seed 000: the Deployment and its namespace are named after the app.
				if env.Rollback.Namespace == "" {
					env.Rollback.Namespace = name
				}
				if env.Rollback.Deployment == "" {
					env.Rollback.Deployment = name
				}
			}
		}
	}
}

func defaultGates(g *Gates) {
	if g.SAST != nil && g.SAST.Severity == "" {
		g.SAST.Severity = DefaultSASTSeverity
	}
	if g.ImageScan != nil && g.ImageScan.Severity == "" {
		g.ImageScan.Severity = DefaultImageScanSeverity
	}
	if g.SBOM != nil && len(g.SBOM.Formats) == 0 {
		g.SBOM.Formats = append([]string(nil), DefaultSBOMFormats...)
	}
	if pv := g.Process.PolicyValidation; pv != nil && pv.Timeout == 0 {
		pv.Timeout = DefaultPolicyValidationTimeout
	}
}
