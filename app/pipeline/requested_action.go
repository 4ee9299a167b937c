package pipeline

import (
	"encoding/json"
	"fmt"

	"github.com/google/go-github/v66/github"
)

// RequestedAction decodes a check_run delivery when it is a click on the
// button identifier of ripcord's check run checkName; nil, and no error,
// for any other check_run delivery. A body that does not decode is a
// permanent error: no retry can fix it.
func RequestedAction(d Delivery, checkName, identifier string) (*github.CheckRunEvent, error) {
	if d.Action != "requested_action" {
		return nil, nil
	}
	var ev github.CheckRunEvent
	if err := json.Unmarshal(d.Body, &ev); err != nil {
		return nil, Permanent(fmt.Errorf("decode check_run event: %w", err))
	}
	if ev.GetCheckRun().GetName() != checkName || ev.GetRequestedAction().Identifier != identifier {
		return nil, nil
	}
	return &ev, nil
}
