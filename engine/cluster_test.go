package engine_test

import (
	"strings"
	"testing"

	"github.com/pdchaos/pdchaos/contract"
	"github.com/pdchaos/pdchaos/engine/model"
	"github.com/pdchaos/pdchaos/internal/testkit"
	"github.com/pdchaos/pdchaos/internal/testkit/testcluster"
)

func TestClusterStreamsExpectedAnswer(t *testing.T) {
	testkit.NoLeaks(t)
	c := testcluster.Start(t, contract.EngineConfig{})
	msgs := []model.Message{{Role: "system", Content: strings.Repeat("you are a careful coding agent ", 40)}, {Role: "user", Content: "fix the bug in main.go"}}
	r := testkit.Chat(t.Context(), c.Endpoint(), msgs, 24)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if want := model.ExpectedChat(msgs, 24); r.Text != want {
		t.Fatalf("answer mismatch\n got %q\nwant %q", r.Text, want)
	}
}
