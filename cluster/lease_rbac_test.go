package cluster

import "testing"

// What /healthz says of the Lease after a forbidden request: a forbidden
// write stands while the Lease reads the same, however often, and ends
// once someone else wrote it (the agent then waits for a holder, and its
// next write says again) or a write of its own succeeds; a forbidden read
// ends at the next read allowed.
func TestLeaseTroubleEndsWhenTheLeaseMovesOn(t *testing.T) {
	t.Parallel()
	var s leaseState
	if !s.fail("update", "may not update") || s.fail("update", "may not update") {
		t.Error("the same forbidden verb is said again")
	}
	for range 3 {
		if _, ended := s.read([]byte("held by us, expired")); ended || s.trouble() == "" {
			t.Fatal("the Lease read as it was when the update was forbidden ended the trouble")
		}
	}
	if msg, ended := s.read([]byte("renewed by another pod")); !ended || msg != "may not update" || s.trouble() != "" {
		t.Errorf("the Lease written by another pod: ended=%v %q, trouble %q; want it ended", ended, msg, s.trouble())
	}

	s.fail("create", "may not create")
	s.read(nil)
	if _, ended := s.read(nil); ended {
		t.Error("a Lease still not found ended a forbidden create")
	}
	if _, ended := s.end(); !ended || s.trouble() != "" {
		t.Error("a write that succeeded did not end the trouble")
	}

	s.fail("get", "may not get")
	if _, ended := s.read(nil); !ended {
		t.Error("a read allowed again did not end a forbidden read")
	}
}
