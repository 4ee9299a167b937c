package webui

import (
	"net/http"
	"time"
)

// flashCookie carries the answer to a form across its 303 redirect, sealed
// so nobody can put words on the page; flashLifetime bounds how long an
// unread one waits.
const (
	flashCookie   = "ripcord_flash"
	flashLifetime = time.Minute
)

// flash is a one-time message shown above the page after a form.
type flash struct {
	OK       bool   `json:"ok"` // false: a refusal
	Text     string `json:"text"`
	Link     string `json:"link,omitempty"`
	LinkText string `json:"link_text,omitempty"`
}

func (h *handler) setFlash(w http.ResponseWriter, f flash) {
	s, err := newSealer(h.app().ClientSecret)
	if err != nil {
		return
	}
	if v, err := s.seal(flashCookie, f); err == nil {
		h.setCookie(w, flashCookie, v, int(flashLifetime.Seconds()))
	}
}

// takeFlash reads the flash message, if any, and clears it, so a reload
// does not show it again.
func (h *handler) takeFlash(w http.ResponseWriter, r *http.Request) *flash {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return nil
	}
	h.setCookie(w, flashCookie, "", -1)
	s, err := newSealer(h.app().ClientSecret)
	if err != nil {
		return nil
	}
	var f flash
	if err := s.open(flashCookie, c.Value, &f); err != nil || f.Text == "" {
		return nil
	}
	return &f
}
