package rollbackpr

import "testing"

func TestSameTrailersNoticesADifferentReason(t *testing.T) {
	r := Rollback{App: "checkout", Environment: "prod", ReleaseID: "rb-1", RollbackOf: "c0ffee-42", Reason: "canary aborted", GitRevision: "1a2b3c4d"}
	msg := CommitMessage(r)
	if !sameTrailers(msg, r) {
		t.Fatal("a message does not match its own rollback")
	}
	other := r
	other.Reason = "another reason"
	if sameTrailers(msg, other) {
		t.Fatal("a different reason was taken for the same rollback")
	}
	other = r
	other.RollbackOf = "c0ffee-43"
	if sameTrailers(msg, other) {
		t.Fatal("a rollback of another release was taken for the same rollback")
	}
}
