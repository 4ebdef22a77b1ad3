package chaos

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// netlab puts each NATS node in its own network namespace, joined to the
// host by a veth pair on one bridge, so that a node can be cut off from
// the other nodes while the host (dispatchers, workers, the harness) still
// reaches it: a minority partition, with clients on both sides.
//
// A cut adds blackhole routes between the node's address and the others'
// inside their namespaces; packets between them are dropped, TCP
// connections stay open and resume when the routes go. Addresses are in
// 198.18.0.0/15, the range RFC 2544 sets aside for such tests.
type netlab struct {
	id     string // prefix of every namespace and link of this run
	subnet string // "198.18.X"
	n      int
}

// netlabPrefix starts the names of everything a netlab creates, followed
// by the harness's process id, so that a sweep can find leftovers.
const netlabPrefix = "jfc"

// ip runs the ip command.
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// netnsProbe says why network namespaces cannot be used here, or nil.
func netnsProbe() error {
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("the ip command is missing (apt-get install -y iproute2)")
	}
	name := fmt.Sprintf("%sp%d", netlabPrefix, os.Getpid())
	if err := ip("netns", "add", name); err != nil {
		return fmt.Errorf("cannot create a network namespace (needs root or CAP_SYS_ADMIN): %w", err)
	}
	defer func() { _ = ip("netns", "del", name) }()
	if err := ip("link", "add", name+"a", "type", "veth", "peer", "name", name+"b", "netns", name); err != nil {
		return fmt.Errorf("cannot create a veth pair: %w", err)
	}
	_ = ip("link", "del", name+"a")
	if err := ip("link", "add", name+"br", "type", "bridge"); err != nil {
		return fmt.Errorf("cannot create a bridge: %w", err)
	}
	_ = ip("link", "del", name+"br")
	return nil
}

// newNetlab creates n namespaces on one bridge.
func newNetlab(n int) (*netlab, error) {
	sweepNetlabs()
	pid := os.Getpid()
	l := &netlab{id: fmt.Sprintf("%s%d", netlabPrefix, pid), subnet: fmt.Sprintf("198.18.%d", pid%250+1), n: n}
	steps := [][]string{
		{"link", "add", l.bridge(), "type", "bridge"},
		{"addr", "add", l.subnet + ".254/24", "dev", l.bridge()},
		{"link", "set", l.bridge(), "up"},
	}
	for i := range n {
		ns, host := l.namespace(i), fmt.Sprintf("%sv%d", l.id, i)
		steps = append(steps,
			[]string{"netns", "add", ns},
			[]string{"link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", ns},
			[]string{"link", "set", host, "master", l.bridge()},
			[]string{"link", "set", host, "up"},
			[]string{"-n", ns, "addr", "add", l.ip(i) + "/24", "dev", "eth0"},
			[]string{"-n", ns, "link", "set", "eth0", "up"},
			[]string{"-n", ns, "link", "set", "lo", "up"},
		)
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			l.close()
			return nil, err
		}
	}
	return l, nil
}

func (l *netlab) bridge() string         { return l.id + "br" }
func (l *netlab) namespace(i int) string { return fmt.Sprintf("%sn%d", l.id, i) }
func (l *netlab) ip(i int) string        { return fmt.Sprintf("%s.%d", l.subnet, i+1) }

// routes lists, for a cut of node i, each namespace and the address it
// must no longer reach.
func (l *netlab) routes(i int) [][2]string {
	var out [][2]string
	for j := range l.n {
		if j != i {
			out = append(out, [2]string{l.namespace(i), l.ip(j)}, [2]string{l.namespace(j), l.ip(i)})
		}
	}
	return out
}

// cut separates node i from the other nodes (not from the host).
func (l *netlab) cut(i int) error {
	for _, r := range l.routes(i) {
		if err := ip("-n", r[0], "route", "add", "blackhole", r[1]+"/32"); err != nil {
			return err
		}
	}
	return nil
}

// heal undoes cut.
func (l *netlab) heal(i int) error {
	var errs []error
	for _, r := range l.routes(i) {
		if err := ip("-n", r[0], "route", "del", "blackhole", r[1]+"/32"); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// close removes the namespaces (and their veth pairs) and the bridge.
func (l *netlab) close() {
	for i := range l.n {
		_ = ip("netns", "del", l.namespace(i))
	}
	_ = ip("link", "del", l.bridge())
}

// sweepNetlabs removes what a killed harness left behind: namespaces and
// bridges whose process id no longer runs.
func sweepNetlabs() {
	entries, _ := os.ReadDir("/var/run/netns")
	for _, e := range entries {
		if pid, ok := netlabPID(e.Name()); ok && !alive(pid) {
			_ = ip("netns", "del", e.Name())
		}
	}
	out, _ := exec.Command("ip", "-o", "link", "show", "type", "bridge").Output()
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		name := strings.TrimSuffix(fields[1], ":")
		if pid, ok := netlabPID(name); ok && !alive(pid) {
			_ = ip("link", "del", name)
		}
	}
}

// netlabPID parses the process id out of a name netlab made.
func netlabPID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, netlabPrefix)
	if !ok {
		return 0, false
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end <= 0 {
		return 0, false
	}
	pid, err := strconv.Atoi(rest[:end])
	return pid, err == nil
}

func alive(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}
