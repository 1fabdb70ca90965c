package model

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"strings"
	"testing"
)

func words(seed, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = fmt.Sprintf("w%d", (seed*7919+i*104729)%5003)
	}
	return strings.Join(w, " ")
}

func TestTokenize(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		text string
		n    int
	}{
		{"empty", "", 1},
		{"blank", " \n\t ", 1},
		{"one", "hello", 1},
		{"spaces", "  a  b\tc\nd ", 4},
		{"long", words(1, 300), 300},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Tokenize(tc.text)
			if len(got) != tc.n {
				t.Fatalf("%d tokens, want %d", len(got), tc.n)
			}
			if again := Tokenize(tc.text); fmt.Sprint(again) != fmt.Sprint(got) {
				t.Error("not deterministic")
			}
		})
	}
	if a, b := Tokenize("x y x"), Tokenize("x"); a[0] != a[2] || a[0] != b[0] || a[0] == a[1] {
		t.Errorf("same word must map to the same token, others differ: %v %v", a, b)
	}
}

func TestPromptKV(t *testing.T) {
	t.Parallel()
	toks := Tokenize(words(2, 50))
	kv := PromptKV(toks)
	if len(kv) != len(toks)*KVBytesPerToken {
		t.Fatalf("len %d, want %d", len(kv), len(toks)*KVBytesPerToken)
	}
	one := make([]byte, KVBytesPerToken)
	for i, tok := range toks {
		KV(one, tok, i)
		if !bytes.Equal(one, kv[i*KVBytesPerToken:(i+1)*KVBytesPerToken]) {
			t.Fatalf("token %d KV differs from KV()", i)
		}
	}
	// Position matters: the same token at another position has other bytes.
	a, b := make([]byte, KVBytesPerToken), make([]byte, KVBytesPerToken)
	KV(a, 7, 0)
	KV(b, 7, 1)
	if bytes.Equal(a, b) {
		t.Error("KV ignores position")
	}
}

// Decode reassembles a prompt's KV from per-rank slices (KVBytesPerToken
// split evenly across TP ranks); the split must lose nothing.
func TestKVSplitAcrossRanks(t *testing.T) {
	t.Parallel()
	kv := PromptKV(Tokenize(words(3, 123)))
	for _, ranks := range []int{1, 2, 4, 8} {
		t.Run(fmt.Sprintf("tp%d", ranks), func(t *testing.T) {
			t.Parallel()
			per := KVBytesPerToken / ranks
			slices := make([][]byte, ranks)
			for tok := 0; tok*KVBytesPerToken < len(kv); tok++ {
				for r := range ranks {
					off := tok*KVBytesPerToken + r*per
					slices[r] = append(slices[r], kv[off:off+per]...)
				}
			}
			var back []byte
			for tok := 0; tok*KVBytesPerToken < len(kv); tok++ {
				for r := range ranks {
					back = append(back, slices[r][tok*per:(tok+1)*per]...)
				}
			}
			if Seed(back) != Seed(kv) {
				t.Error("reassembled KV has another seed")
			}
		})
	}
}

func TestExpected(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 5, 50, 300} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			p := words(n, n)
			for _, maxTok := range []int{0, 1, 7, 64} {
				got := Expected(p, maxTok)
				if got != Generate(Seed(PromptKV(Tokenize(p))), maxTok) {
					t.Fatal("Expected disagrees with Generate(Seed(PromptKV(Tokenize)))")
				}
				if got != Expected(p, maxTok) {
					t.Fatal("not deterministic")
				}
				if f := strings.Fields(got); len(f) != maxTok || (maxTok > 0 && strings.Join(f, " ") != got) {
					t.Fatalf("answer %q: want %d words separated by one space", got, maxTok)
				}
				if maxTok > 1 && !strings.HasPrefix(got, Expected(p, maxTok-1)) {
					t.Fatal("a longer answer must extend the shorter one")
				}
			}
		})
	}
}

// One flipped KV byte anywhere changes the answer: that is how decode's
// corrupted pages show up.
func TestSeedSeesEveryByte(t *testing.T) {
	t.Parallel()
	kv := PromptKV(Tokenize(words(4, 100)))
	want := Generate(Seed(kv), 8)
	for _, i := range []int{0, 1, len(kv) / 2, len(kv) - 1} {
		c := bytes.Clone(kv)
		c[i] ^= 1
		if Generate(Seed(c), 8) == want {
			t.Errorf("flipping byte %d does not change the answer", i)
		}
	}
	if Seed(kv[:len(kv)-KVBytesPerToken]) == Seed(kv) {
		t.Error("a missing token does not change the seed")
	}
}

func TestPiecesAndWords(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 20 {
		tok := OutputToken(99, i)
		if tok >= VocabSize {
			t.Fatalf("token %d outside vocab", tok)
		}
		if w := Word(tok); len(w) != 6 {
			t.Errorf("word %q not 6 letters", w)
		}
		b.WriteString(Piece(tok, i))
	}
	if b.String() != Generate(99, 20) {
		t.Error("pieces do not concatenate to Generate")
	}
	if Word(0) == Word(1) {
		t.Error("distinct tokens share a word")
	}
}

func TestChat(t *testing.T) {
	t.Parallel()
	msgs := []Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: words(5, 60)}}
	p := ChatPrompt(msgs)
	if !strings.HasPrefix(p, "<|system|>\nbe brief\n<|user|>\n") || !strings.HasSuffix(p, "<|assistant|>\n") {
		t.Errorf("template %q", p)
	}
	if ExpectedChat(msgs, 9) != Expected(p, 9) {
		t.Error("ExpectedChat != Expected(ChatPrompt)")
	}
	if ExpectedChat(msgs[1:], 9) == ExpectedChat(msgs, 9) {
		t.Error("dropping a message does not change the answer")
	}
}

// Digest taken piece by piece is Seed of the whole: FNV-1a over the KV
// bytes, mixed, whatever the pieces.
func TestDigestIsSeed(t *testing.T) {
	t.Parallel()
	tokens := Tokenize(words(3, 300))
	kv := append(PromptKV(tokens), make([]byte, 40)...)
	h := fnv.New64a()
	h.Write(kv)
	if want := mix64(h.Sum64()); Seed(kv) != want {
		t.Fatalf("Seed %x, FNV-1a mixed %x", Seed(kv), want)
	}
	n := len(tokens) * KVBytesPerToken
	pieces := NewDigest().Write(kv[:7]).Write(kv[7:n]).Write(kv[n:]).Seed()
	split := NewDigest().WriteTokens(tokens[:100], 0).WriteTokens(tokens[100:], 100).Write(make([]byte, 40)).Seed()
	if pieces != Seed(kv) || split != Seed(kv) {
		t.Fatalf("digest in pieces %x, tokens split %x, Seed %x", pieces, split, Seed(kv))
	}
	if NewDigest().Seed() != Seed(nil) {
		t.Fatal("empty digest differs from Seed(nil)")
	}
}

// TestTokenizeSplitsAsFields holds Tokenize to the words strings.Fields
// finds, on ASCII text (split by hand) and on text with Unicode spaces.
func TestTokenizeSplitsAsFields(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"", " ", "a", " a", "a ", "\va\fb\rc\x00d", "héllo wörld", "a\u00a0b\u0085c\u2003d", "x\u3000 y", words(3, 50) + "\t\n"} {
		var want []Token
		for _, w := range strings.Fields(text) {
			h := fnv.New32a()
			h.Write([]byte(w))
			want = append(want, Token(h.Sum32()))
		}
		if len(want) == 0 {
			want = []Token{0}
		}
		if got := Tokenize(text); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Tokenize(%q) = %v, want %v", text, got, want)
		}
	}
}
