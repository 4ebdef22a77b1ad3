package dispatcher

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
)

// servedFamilies registers the dispatcher's metrics on a registry with
// the Go and process collectors, as `jetflow serve` builds it, gives
// every labelled metric one child so that it is gathered, and returns
// the families by name.
func servedFamilies(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	// Every field of metrics is one collector: touch each vector once.
	all := []prometheus.Collector{m.started, m.settled, m.messages, m.conflicts, m.redelivery, m.step, m.removed, m.removalFailures, m.strayBatched, m.indexers, m.stepLimit}
	if n := reflect.TypeFor[metrics]().NumField(); n != len(all) {
		t.Fatalf("metrics has %d fields and this test lists %d collectors: list the new one", n, len(all))
	}
	collectorsIn := len(all)
	for _, c := range all {
		switch c := c.(type) {
		case *prometheus.CounterVec:
			c.WithLabelValues(make([]string, labelCount(c))...).Add(0)
		case *prometheus.HistogramVec:
			c.WithLabelValues(make([]string, labelCount(c))...).Observe(0)
		}
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	jetflow := 0
	for _, f := range fams {
		out[f.GetName()] = f
		if strings.HasPrefix(f.GetName(), "jetflow_") {
			jetflow++
		}
	}
	if jetflow != collectorsIn {
		t.Fatalf("%d jetflow families gathered for %d collectors in metrics: a new kind of vector needs a case above", jetflow, collectorsIn)
	}
	return out
}

// labelCount is how many labels a vector's descriptor declares.
func labelCount(c prometheus.Collector) int {
	ch := make(chan *prometheus.Desc, 1)
	c.Describe(ch)
	d := (<-ch).String()
	_, labels, _ := strings.Cut(d, "variableLabels: {")
	labels, _, _ = strings.Cut(labels, "}")
	if labels == "" {
		return 0
	}
	return len(strings.Split(labels, ","))
}

var docRow = regexp.MustCompile("^\\| `([a-z_]+)` \\| ([a-z]+) \\| ([^|]+) \\|")

// TestMetricsDocListsEveryMetric compares docs/OBSERVABILITY.md's metric
// table with the registry: every jetflow metric, with its type and
// labels, and nothing else.
func TestMetricsDocListsEveryMetric(t *testing.T) {
	fams := servedFamilies(t)
	doc, err := os.ReadFile("../docs/OBSERVABILITY.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "<!-- metrics:begin -->")
	table, _, ok2 := strings.Cut(table, "<!-- metrics:end -->")
	if !ok || !ok2 {
		t.Fatal("docs/OBSERVABILITY.md has no metrics:begin/end markers around its metric table")
	}
	documented := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		m := docRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name, typ, labels := m[1], m[2], strings.TrimSpace(m[3])
		documented[name] = true
		f, ok := fams[name]
		if !ok {
			t.Errorf("docs/OBSERVABILITY.md lists %s, which the dispatcher does not register", name)
			continue
		}
		if want := strings.ToLower(f.GetType().String()); typ != want {
			t.Errorf("docs/OBSERVABILITY.md says %s is a %s; it is a %s", name, typ, want)
		}
		var got []string
		for _, lp := range f.GetMetric()[0].GetLabel() {
			got = append(got, "`"+lp.GetName()+"`")
		}
		want := "–"
		if len(got) > 0 {
			slices.Sort(got)
			want = strings.Join(got, ", ")
		}
		if labels != want {
			t.Errorf("docs/OBSERVABILITY.md gives %s the labels %q; they are %q", name, labels, want)
		}
	}
	for name := range fams {
		if strings.HasPrefix(name, "jetflow_") && !documented[name] {
			t.Errorf("metric %s is not in docs/OBSERVABILITY.md's table: add a row with its type, labels and meaning", name)
		}
	}
}

var metricName = regexp.MustCompile(`\b(jetflow_[a-z_]+|process_[a-z_]+|go_[a-z_]+)\b`)

// TestDashboardQueriesServedMetrics reads every query of the Grafana
// dashboard and checks each metric it names is one the registry serves
// (a histogram's _bucket, _sum and _count included), and that it queries
// every jetflow metric.
func TestDashboardQueriesServedMetrics(t *testing.T) {
	fams := servedFamilies(t)
	data, err := os.ReadFile("../deploy/grafana/jetflow.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("deploy/grafana/jetflow.json: %v", err)
	}
	queried := map[string]bool{}
	exprs := 0
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs++
			for _, name := range metricName.FindAllString(tg.Expr, -1) {
				base := name
				if f, ok := fams[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")]; ok && f.GetType() == dto.MetricType_HISTOGRAM {
					base = f.GetName()
				}
				if _, ok := fams[base]; !ok {
					t.Errorf("panel %q queries %s, which the dispatcher's registry does not serve", p.Title, name)
				}
				queried[base] = true
			}
		}
	}
	if exprs == 0 {
		t.Fatal("the dashboard has no queries")
	}
	for name := range fams {
		if strings.HasPrefix(name, "jetflow_") && !queried[name] {
			t.Errorf("no panel of the dashboard shows %s", name)
		}
	}
}
