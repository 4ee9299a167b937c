package records

// The statements of the list reads, for BenchmarkYear to print their
// plans.
var (
	ListQuery           = listQuery
	AuditQuery          = auditQuery
	OwnerQuery          = ownerQuery
	NewestRanOneSQL     = newestRanOneQuery
	NewestRanLateralSQL = newestRanLateralQuery
)
