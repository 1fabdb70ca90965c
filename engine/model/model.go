// Package model is the bundled engine's fake language model: deterministic
// tokens and deterministic KV bytes, so that a client can compute the exact
// answer the engine must give and a corrupted KV page shows up as a wrong
// answer.
//
// The model is pure: no goroutines, clocks or randomness. It must not import
// any other pdchaos package; everything else (engine, agents, harness) uses it.
package model

import (
	"encoding/binary"
	"strings"
	"unicode/utf8"
)

// KVBytesPerToken is the size of one token's KV entry. Small enough that long
// agent prompts stay cheap, large enough that a stray write is unmistakable.
const KVBytesPerToken = 16

// VocabSize is the number of distinct output words the model can produce.
const VocabSize = 4096

// Token is one prompt or output token id.
type Token uint32

// Tokenize splits text on whitespace and maps each word to a token id. Empty
// text gives one token so that every request has a KV entry to transfer.
func Tokenize(text string) []Token {
	// The words as strings.Fields splits them, mapped as they are found
	// rather than collected first: a prompt's word slice was a tenth of
	// the engine's allocation. ASCII text (every prompt the harness
	// sends) is split by hand, as strings.Fields does.
	n, ascii, inWord := 0, true, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
		space := asciiSpace[c] != 0
		if !space && !inWord {
			n++
		}
		inWord = !space
	}
	if !ascii {
		n = 0
		for range strings.FieldsSeq(text) {
			n++
		}
	}
	if n == 0 {
		return []Token{0}
	}
	out := make([]Token, 0, n)
	if !ascii {
		for w := range strings.FieldsSeq(text) {
			out = append(out, Token(fnv32(w)))
		}
		return out
	}
	start := -1
	for i := 0; i <= len(text); i++ {
		if i == len(text) || asciiSpace[text[i]] != 0 {
			if start >= 0 {
				out = append(out, Token(fnv32(text[start:i])))
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	return out
}

// asciiSpace marks the ASCII bytes unicode.IsSpace holds for.
var asciiSpace = [256]uint8{'\t': 1, '\n': 1, '\v': 1, '\f': 1, '\r': 1, ' ': 1}

// KV writes the KV entry of token t at position pos into dst, which must hold
// KVBytesPerToken bytes.
func KV(dst []byte, t Token, pos int) {
	a := mix64(uint64(t)<<32 ^ uint64(pos))
	b := mix64(a ^ 0x9e3779b97f4a7c15)
	binary.LittleEndian.PutUint64(dst[0:8], a)
	binary.LittleEndian.PutUint64(dst[8:16], b)
}

// PromptKV returns the KV bytes of a whole prompt, token after token.
func PromptKV(tokens []Token) []byte {
	out := make([]byte, len(tokens)*KVBytesPerToken)
	for i, t := range tokens {
		KV(out[i*KVBytesPerToken:], t, i)
	}
	return out
}

// Seed digests a prompt's KV bytes into the state generation starts from.
// Decode calls it on the bytes it actually holds in its pages, so a page that
// another request overwrote changes every output token.
func Seed(kv []byte) uint64 {
	return NewDigest().Write(kv).Seed()
}

// Digest is Seed taken piece by piece, for callers whose KV bytes are not
// in one slice (decode's pages) or share a prefix (every agent prompt
// starts with the system prompt): NewDigest().Write(a).Write(b).Seed() ==
// Seed(append(a, b...)).
type Digest uint64

// NewDigest is the digest of no bytes.
func NewDigest() Digest { return 14695981039346656037 }

// Write digests kv after what d has digested.
func (d Digest) Write(kv []byte) Digest {
	h := uint64(d)
	for _, c := range kv {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return Digest(h)
}

// WriteTokens digests the KV entries of tokens at positions from, from+1,
// ...: PromptKV's bytes without building them.
func (d Digest) WriteTokens(tokens []Token, from int) Digest {
	var kv [KVBytesPerToken]byte
	for i, t := range tokens {
		KV(kv[:], t, from+i)
		d = d.Write(kv[:])
	}
	return d
}

// Seed is the generation seed of the bytes digested so far.
func (d Digest) Seed() uint64 { return mix64(uint64(d)) }

// OutputToken is the i-th generated token for a generation seeded with seed.
func OutputToken(seed uint64, i int) Token {
	return Token(mix64(seed+uint64(i)*0x9e3779b97f4a7c15) % VocabSize)
}

// Word is the text of an output token, a pronounceable syllable pair so
// answers are readable in reports.
func Word(t Token) string {
	const cons = "bdfgklmnprstvz"
	const vows = "aeiou"
	n := int(t)
	var b strings.Builder
	for range 3 {
		b.WriteByte(cons[n%len(cons)])
		n /= len(cons)
		b.WriteByte(vows[n%len(vows)])
		n /= len(vows)
	}
	return b.String()
}

// Piece is the text streamed for the i-th output token: words are separated
// by one space, so the concatenation of pieces is the answer.
func Piece(t Token, i int) string {
	if i == 0 {
		return Word(t)
	}
	return " " + Word(t)
}

// Generate returns the answer text for a generation seeded with seed.
func Generate(seed uint64, maxTokens int) string {
	var b strings.Builder
	for i := range maxTokens {
		b.WriteString(Piece(OutputToken(seed, i), i))
	}
	return b.String()
}

// Expected is the exact answer the engine must give for prompt when it
// generates maxTokens tokens.
func Expected(prompt string, maxTokens int) string {
	return Generate(Seed(PromptKV(Tokenize(prompt))), maxTokens)
}

// Message is one chat message, as in the OpenAI API.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ChatPrompt applies the model's chat template. The router uses it to turn a
// chat completion into a prompt, and clients use it to compute Expected.
func ChatPrompt(messages []Message) string {
	var b strings.Builder
	for _, m := range messages {
		b.WriteString("<|")
		b.WriteString(m.Role)
		b.WriteString("|>\n")
		b.WriteString(m.Content)
		b.WriteString("\n")
	}
	b.WriteString("<|assistant|>\n")
	return b.String()
}

// ExpectedChat is Expected for a chat completion.
func ExpectedChat(messages []Message, maxTokens int) string {
	return Expected(ChatPrompt(messages), maxTokens)
}

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// mix64 is splitmix64's finaliser: cheap, and every input bit flips about
// half of the output bits.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
