package records

// The statements of the list reads and the sweep, for BenchmarkYear to print their
// plans.
var (
	ListQuery           = listQuery
	AuditQuery          = auditQuery
	OwnerQuery          = ownerQuery
	NewestRanOneSQL     = newestRanOneQuery
	NewestRanLateralSQL = newestRanLateralQuery
	SweepQuery          = sweepQuery
	SettledStates       = settledStates
)
