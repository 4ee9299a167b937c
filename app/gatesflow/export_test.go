package gatesflow

import "time"

// SetSlowAfter shortens the in_progress threshold for a test.
func SetSlowAfter(d time.Duration) (restore func()) {
	old := slowAfter
	slowAfter = d
	return func() { slowAfter = old }
}

// SetEvaluateTimeout shortens the evaluation job's timeout for a test.
func SetEvaluateTimeout(d time.Duration) (restore func()) {
	old := evaluateTimeout
	evaluateTimeout = d
	return func() { evaluateTimeout = old }
}
