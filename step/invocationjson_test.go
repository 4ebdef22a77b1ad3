package step

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/jetflow/jetflow/wire"
)

// invocationCases hold what encodeInvocation must write as json.Marshal
// does: escapes, HTML characters, invalid UTF-8, the separators, and
// deadlines in both notations.
func invocationCases(tb testing.TB) []wire.Invocation {
	tb.Helper()
	input := func(v any) json.RawMessage {
		raw, err := rawJSON(v)
		if err != nil {
			tb.Fatal(err)
		}
		return raw
	}
	base := wire.Invocation{
		Run: "ot-0-1", Activation: `["ot-0-1","/states/work",1]`, State: "/states/work", Node: "task",
		Task: "echo", Version: "1", Attempt: 1, Input: input(1.0), Token: "v1.abc-_", Reply: "jetflow.in.ot-0-1.result", Deadline: 1_733_200_000_123,
	}
	cases := []wire.Invocation{base}
	add := func(f func(*wire.Invocation)) {
		c := base
		f(&c)
		cases = append(cases, c)
	}
	add(func(c *wire.Invocation) { c.Deadline = 0; c.Input = nil })
	add(func(c *wire.Invocation) { c.With = input(map[string]any{"b": "x", "a": []any{1.0, nil, true}}) })
	add(func(c *wire.Invocation) { c.Input = input(map[string]any{"html": "<a href='x'>&amp;</a>"}) })
	add(func(c *wire.Invocation) { c.Input = input("line\u2028para\u2029") })
	add(func(c *wire.Invocation) { c.With = input("<") })
	add(func(c *wire.Invocation) { c.Input = input("ä€😀 \u00e2") })
	add(func(c *wire.Invocation) { c.Node = "a\"b\\c\b\f\n\r\t\x00\x1f\x7f<>&\u2028\u2029\xff\xe2\x80" })
	add(func(c *wire.Invocation) { c.State = "/states/ä€😀" })
	add(func(c *wire.Invocation) { c.Attempt = -3 })
	add(func(c *wire.Invocation) { c.Deadline = 1e21 })
	add(func(c *wire.Invocation) { c.Deadline = 1e-7 })
	add(func(c *wire.Invocation) { c.Deadline = 0.5 })
	add(func(c *wire.Invocation) { c.Deadline = -12.25 })
	add(func(c *wire.Invocation) { c.Deadline = math.MaxFloat64 })
	return cases
}

func TestEncodeInvocationIsMarshal(t *testing.T) {
	t.Parallel()
	for _, c := range invocationCases(t) {
		checkInvocation(t, c)
	}
}

func checkInvocation(t *testing.T, inv wire.Invocation) {
	t.Helper()
	want, wantErr := json.Marshal(inv)
	got, err := encodeInvocation(&inv)
	if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
		t.Fatalf("encodeInvocation(%+v)\n got %s (%v)\nwant %s (%v)", inv, got, err, want, wantErr)
	}
}

func FuzzEncodeInvocation(f *testing.F) {
	for _, c := range invocationCases(f) {
		f.Add(c.Run, c.Activation, c.Node, string(c.Input), c.Attempt, c.Deadline)
	}
	f.Fuzz(func(t *testing.T, run, activation, node, input string, attempt int, deadline float64) {
		raw, err := rawJSON(input)
		if err != nil {
			t.Skip()
		}
		checkInvocation(t, wire.Invocation{
			Run: run, Activation: activation, State: run + node, Node: node, Task: "t", Version: "1",
			Attempt: attempt, Input: raw, With: raw, Token: activation, Reply: run, Deadline: deadline,
		})
	})
}

// BenchmarkEncodeInvocation compares the hand encoder with json.Marshal
// on the bench's one-task invocation.
//
//	go test ./step -run '^$' -bench EncodeInvocation -benchmem
func BenchmarkEncodeInvocation(b *testing.B) {
	inv := invocationCases(b)[0]
	b.Run("encoder=hand", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := encodeInvocation(&inv); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoder=json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := json.Marshal(inv); err != nil {
				b.Fatal(err)
			}
		}
	})
}
