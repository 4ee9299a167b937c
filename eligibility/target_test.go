package eligibility

import (
	"strings"
	"testing"

	"github.com/ripcord/ripcord/records"
)

func TestSelectTarget(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rs      []records.Record
		current string
		n       int
		want    string // target release; "" for none
		reason  string
	}{
		{"current release is excluded: the previous healthy one is chosen",
			six(), "R6", 0, "R5", "R5 is the newest release before R6 that reached healthy"},
		{"a release that never reached healthy is passed over",
			six(), "R5", 0, "R3", "passed over: R4 never reached healthy (aborted)"},
		{"a release that was rolled back is passed over",
			[]records.Record{
				rec("R3", 30, "v1", state(records.StateHealthy)),
				rec("R2", 20, "v2", state(records.StateRolledBack), func(r *records.Record) { r.RolledBackBy = "R3" }),
				rec("R1", 10, "v1"),
			}, "R3", 0, "", "R2 was rolled back by R3"},
		{"the release a failed rollback was rolling back is passed over",
			[]records.Record{
				rec("RB", 40, "v2", neverHealthy(records.StateFailed), rollbackOf("R3")),
				rec("R3", 30, "v3", state(records.StateHealthy)),
				rec("R2", 20, "v2"),
				rec("R1", 10, "v1"),
			}, "RB", 0, "R1", "R3 is what RB rolls back"},
		{"a release with the current image is passed over",
			[]records.Record{rec("R3", 30, "v2", state(records.StateHealthy)), rec("R2", 20, "v2"), rec("R1", 10, "v1")},
			"R3", 0, "R1", "R2 runs the same image as R3"},
		{"newer releases than the current one are not targets",
			append([]records.Record{rec("R7", 70, "v7", neverHealthy(records.StateProgressing))}, six()...),
			"R6", 0, "R5", "the third-newest"},
		{"only the newest n count",
			[]records.Record{
				rec("R6", 60, "v6", state(records.StateHealthy)),
				rec("R5", 50, "v5", neverHealthy(records.StateFailed)),
				rec("R4", 40, "v4", neverHealthy(records.StateAborted)),
				rec("R3", 30, "v3"),
			}, "R6", 3, "", "no release before R6 among the newest 3"},
		{"opened records (pull requests not merged) take no place in the window",
			[]records.Record{
				rec("P8", 80, "v8", neverHealthy(records.StateOpened)),
				rec("P7", 70, "v7", neverHealthy(records.StateOpened)),
				rec("R6", 60, "v6", state(records.StateHealthy)),
				rec("R5", 50, "v5", neverHealthy(records.StateFailed)),
				rec("R4", 40, "v4"),
			}, "R6", 3, "R4", "the third-newest"},
		{"releases that failed before they ran take no place in the window, and are not current",
			[]records.Record{
				rec("F8", 80, "v8", failedUnrun),
				rec("R6", 60, "v6", state(records.StateHealthy)),
				rec("R5", 50, "v5", neverHealthy(records.StateFailed)),
				rec("R4", 40, "v4"),
			}, "R6", 3, "R4", "the third-newest"},
		{"current outside the window",
			six(), "R1", 5, "", "R1 is not among the newest 5"},
		{"current release not recorded",
			six(), "R9", 0, "", `current release "R9" is not recorded`},
		{"records of another cluster are not targets",
			[]records.Record{rec("R6", 60, "v6", state(records.StateHealthy)), rec("U5", 50, "v5", cluster("prod-us"))},
			"R6", 0, "", "no release before R6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, a := SelectTarget(tc.rs, tc.current, tc.n)
			if got.ReleaseID != tc.want {
				t.Fatalf("target = %q (%s), want %q", got.ReleaseID, a.Reason, tc.want)
			}
			if a.Eligible != (tc.want != "") {
				t.Errorf("eligible = %v, want %v", a.Eligible, tc.want != "")
			}
			if tc.want != "" && (a.Evidence == nil || a.Evidence.ReleaseID != tc.want) {
				t.Errorf("evidence = %+v, want %s", a.Evidence, tc.want)
			}
			if !strings.Contains(a.Reason, tc.reason) {
				t.Errorf("reason %q, want it to contain %q", a.Reason, tc.reason)
			}
		})
	}
}

// A chosen target must also pass Check for its own digest: the two
// functions cannot disagree.
func TestSelectedTargetIsEligible(t *testing.T) {
	rs := six()
	target, _ := SelectTarget(rs, "R6", 5)
	a := Check(rs, query(target.Digest), 5)
	if !a.Eligible || a.Evidence.ReleaseID != target.ReleaseID {
		t.Errorf("Check(%s) = %+v, want eligible by %s", target.Digest, a, target.ReleaseID)
	}
}
