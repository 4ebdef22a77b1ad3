package jslt_test

import (
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/jetflow/jetflow/engine/jslt"
	"github.com/jetflow/jetflow/engine/query"
	"github.com/jetflow/jetflow/engine/value"
)

// benchSheets are the stylesheets conformance/bench-jslt.mjs times on the
// reference, over the same inputs (benchInput), so the two figures
// compare one transformation each.
var benchSheets = map[string]string{
	"vat":      `[{"match":"$..price","body":{"$mul":["$",1.21]}}]`,
	"surgical": `[{"match":"$.meta.version","body":{"$add":["$",1]}}]`,
	"modes": `{"$jslt":"0.1","rules":[
		{"match":"$","body":{"toc":[{"$apply":["$.sections[*]","toc"]}],"body":[{"$apply":["$.sections[*]","render"]}]}},
		{"mode":"toc","match":"$.sections[*]","body":{"ref":"$.id","label":"$.heading"}},
		{"mode":"render","match":"$.sections[*]","body":{"anchor":"$.id","heading":"$.heading","text":"$.text"}}]}`,
	"dispatch": `{"$jslt":"0.1","unmatched":"error","rules":[
		{"match":"$","body":[{"$apply":"$.events[*]"}]},
		{"match":"$.events[?@.error]","body":{"level":"fatal","message":"$.error"}},
		{"match":"$.events[?@.info]","body":{"level":"note","message":"$.info"}},
		{"body":{"level":"unknown"}}]}`,
	"flwor": `[{"match":"$","body":{"adults":[{"$for":{"p":"$.people[*]"},"$where":{"$ge":["$p.age",18]},"$return":["li",{},"$p.name"]}]}}]`,
}

// benchInput builds the one input every benchmark reads: 50 books, 20
// sections, 30 events, 50 people and a meta object.
func benchInput(tb testing.TB) any {
	var b strings.Builder
	b.WriteString(`{"catalog":{"book":[`)
	for i := range 50 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"title":"T` + strconv.Itoa(i) + `","price":` + strconv.Itoa(i+1) + `,"tags":["a","b"]}`)
	}
	b.WriteString(`]},"sections":[`)
	for i := range 20 {
		if i > 0 {
			b.WriteByte(',')
		}
		n := strconv.Itoa(i)
		b.WriteString(`{"id":"s` + n + `","heading":"H` + n + `","text":"text ` + n + `"}`)
	}
	b.WriteString(`],"events":[`)
	for i := range 30 {
		if i > 0 {
			b.WriteByte(',')
		}
		switch i % 3 {
		case 0:
			b.WriteString(`{"info":"i` + strconv.Itoa(i) + `"}`)
		case 1:
			b.WriteString(`{"error":"e` + strconv.Itoa(i) + `"}`)
		default:
			b.WriteString(`{"beep":true}`)
		}
	}
	b.WriteString(`],"people":[`)
	for i := range 50 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"name":"p` + strconv.Itoa(i) + `","age":` + strconv.Itoa(i%40) + `}`)
	}
	b.WriteString(`],"meta":{"version":1,"owner":{"name":"N"}}}`)
	v, err := value.Decode([]byte(b.String()), value.Limits{})
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// BenchmarkTransform times one transformation per stylesheet
// (node conformance/bench-jslt.mjs times the reference on the same).
func BenchmarkTransform(b *testing.B) {
	in := benchInput(b)
	for _, name := range []string{"vat", "surgical", "modes", "dispatch", "flwor"} {
		b.Run(name, func(b *testing.B) {
			doc, err := value.Decode([]byte(benchSheets[name]), value.Limits{})
			if err != nil {
				b.Fatal(err)
			}
			s, err := jslt.Compile(doc)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				if _, _, err := s.Transform(&query.Budget{}, in, nil); err != nil {
					b.Fatal(err)
				}
			}
			// CPU time (the process's, GC included) is what a loaded
			// machine cannot inflate; bench-jslt.mjs reports the same
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime returns the CPU time the process has used, in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
