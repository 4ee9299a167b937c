package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// JobGone reports whether job id will never run again: River no longer
// has it, or finalized it (completed, cancelled, or discarded after its
// last attempt). A job that holds a claim (the creation of a check run or
// an issue) and is gone can have its claim taken over; one that is queued,
// running or waiting to retry is waited for.
func (d Deps) JobGone(ctx context.Context, id int64) (bool, error) {
	row, err := d.River().JobGet(ctx, id)
	if errors.Is(err, river.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("job %d: %w", id, err)
	}
	switch row.State {
	case rivertype.JobStateCompleted, rivertype.JobStateCancelled, rivertype.JobStateDiscarded:
		return true, nil
	}
	return false, nil
}
