package pipeline

import "testing"

func TestRequestedAction(t *testing.T) {
	click := []byte(`{"action":"requested_action","check_run":{"name":"ripcord/rollout","external_id":"ro1"},"requested_action":{"identifier":"approve"}}`)
	tests := []struct {
		name      string
		d         Delivery
		want      bool
		permanent bool
	}{
		{"the button of this check run", Delivery{Action: "requested_action", Body: click}, true, false},
		{"another action of check_run", Delivery{Action: "rerequested", Body: click}, false, false},
		{"another check run's button", Delivery{Action: "requested_action", Body: []byte(`{"check_run":{"name":"ripcord/release"},"requested_action":{"identifier":"approve"}}`)}, false, false},
		{"another button", Delivery{Action: "requested_action", Body: []byte(`{"check_run":{"name":"ripcord/rollout"},"requested_action":{"identifier":"abort"}}`)}, false, false},
		{"a body that does not decode", Delivery{Action: "requested_action", Body: []byte(`{`)}, false, true},
	}
	for _, tt := range tests {
		ev, err := RequestedAction(tt.d, "ripcord/rollout", "approve")
		if (ev != nil) != tt.want || (err != nil) != tt.permanent || (err != nil && !IsPermanent(err)) {
			t.Errorf("%s: event %v, err %v; want event %v, permanent error %v", tt.name, ev != nil, err, tt.want, tt.permanent)
		}
		if ev != nil && ev.GetCheckRun().GetExternalID() != "ro1" {
			t.Errorf("%s: decoded %+v", tt.name, ev.GetCheckRun())
		}
	}
}
