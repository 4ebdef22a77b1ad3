package embedded

import (
	"testing"
)

func TestSplitListen(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		host string
		port int
		ok   bool
	}{
		{"127.0.0.1:4222", "127.0.0.1", 4222, true},
		{":4222", "127.0.0.1", 4222, true}, // loopback unless told otherwise
		{"0.0.0.0:4222", "0.0.0.0", 4222, true},
		{"127.0.0.1:0", "127.0.0.1", -1, true}, // 0 is random, not the server's 4222
		{"127.0.0.1:-1", "127.0.0.1", -1, true},
		{"[::1]:5000", "::1", 5000, true},
		{"127.0.0.1", "", 0, false},
		{"127.0.0.1:x", "", 0, false},
		{"127.0.0.1:-2", "", 0, false},
		{"127.0.0.1:65536", "", 0, false},
	}
	for _, c := range cases {
		host, port, err := splitListen(c.in)
		if (err == nil) != c.ok || host != c.host || port != c.port {
			t.Errorf("splitListen(%q) = %q %d %v", c.in, host, port, err)
		}
	}
}

func TestOptions(t *testing.T) {
	t.Parallel()
	cfg := Config{Listen: "127.0.0.1:-1", Cluster: &ClusterConfig{Name: "c", Routes: []string{"127.0.0.1:7001", "nats-route://127.0.0.1:7002"}}}.withDefaults()
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	o := cfg.options("/store", 0, 0)
	if o.Port != -1 || o.Cluster.Port != -1 || o.Cluster.Host != "127.0.0.1" || len(o.Routes) != 2 || o.Routes[0].Scheme != "nats-route" || !o.JetStream || o.StoreDir != "/store" {
		t.Fatalf("options = %+v", o)
	}
	// A restart pins the ports the first start bound.
	if o := cfg.options("/store", 4333, 6333); o.Port != 4333 || o.Cluster.Port != 6333 {
		t.Fatalf("pinned ports = %d %d", o.Port, o.Cluster.Port)
	}
	fixed := Config{Listen: "127.0.0.1:5555"}.withDefaults()
	if o := fixed.options("/s", 4333, 0); o.Port != 5555 {
		t.Fatalf("a fixed port was replaced by %d", o.Port)
	}
}

func FuzzSplitListen(f *testing.F) {
	for _, s := range []string{"127.0.0.1:4222", ":0", "[::1]:-1", "a:b:c", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		host, port, err := splitListen(s)
		if err != nil {
			return
		}
		if host == "" || port < -1 || port == 0 || port > 65535 {
			t.Fatalf("splitListen(%q) = %q %d", s, host, port)
		}
	})
}
