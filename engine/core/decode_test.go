package core

import (
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/model"
)

// Decode records how many pages a rank each request it takes waits for,
// so a checker can tell a wait that can end from one that never can; a
// request needing more than the pool is refused and records nothing.
func TestDecodeRecordsPagesNeeded(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOpts{decodePages: 8})
	prompt := strings.Repeat("word ", 100)
	r.addD("fits", 7, prompt, 4)
	want := (len(model.Tokenize(prompt)) + 15) / 16
	needed := func(room uint64) (string, bool) {
		held, _ := r.dh.Snapshot()
		for _, rec := range held {
			if rec.Room != room {
				continue
			}
			for _, e := range rec.Events {
				if e.Kind == contract.RoomEventPagesNeeded {
					return e.Detail, true
				}
			}
		}
		return "", false
	}
	if got, ok := needed(7); !ok || got != contract.PagesNeeded(want) {
		t.Errorf("room 7 records %q (found %v), want %q", got, ok, contract.PagesNeeded(want))
	}
	long := strings.Repeat("word ", 400)
	if err := r.d.Add(r.now, "too-long", 8, testBootstrap, model.Tokenize(long), 4); err == nil {
		t.Fatal("a request needing more pages than the pool was taken")
	}
	if got, ok := needed(8); ok {
		t.Errorf("the refused request recorded %q", got)
	}
}
