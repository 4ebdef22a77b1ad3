package bench

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Process figures come from Linux's /proc; elsewhere they read as zero
// and the report says so.

// clockTick is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// procUsage is one process's CPU time and resident memory.
type procUsage struct {
	CPU time.Duration
	// RSS and Peak are the current and peak resident set, in bytes.
	RSS, Peak int64
}

// readUsage reads pid's usage (0 is this process).
func readUsage(pid int) (procUsage, error) {
	dir := "/proc/self"
	if pid != 0 {
		dir = "/proc/" + strconv.Itoa(pid)
	}
	var u procUsage
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return u, err
	}
	// The command name is in parentheses and may hold spaces: fields
	// are counted after the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return u, fmt.Errorf("%s/stat: no command name", dir)
	}
	f := strings.Fields(string(stat[i+1:]))
	// After ')': state is field 3, utime 14 and stime 15 (1-based).
	if len(f) < 13 {
		return u, fmt.Errorf("%s/stat: %d fields", dir, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return u, fmt.Errorf("%s/stat: utime %q stime %q", dir, f[11], f[12])
	}
	u.CPU = time.Duration(ut+st) * clockTick
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return u, err
	}
	for line := range strings.Lines(string(status)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return u, fmt.Errorf("%s/status: %s %q", dir, k, v)
		}
		if k == "VmRSS" {
			u.RSS = n << 10
		} else {
			u.Peak = n << 10
		}
	}
	return u, nil
}

// resetPeak starts pid's peak resident set afresh (0 is this process), so
// that a phase's peak is its own.
func resetPeak(pid int) error {
	path := "/proc/self/clear_refs"
	if pid != 0 {
		path = "/proc/" + strconv.Itoa(pid) + "/clear_refs"
	}
	return os.WriteFile(path, []byte("5"), 0)
}

// loadAverage is the 1, 5 and 15 minute load average, zeros if unknown.
func loadAverage() [3]float64 {
	var l [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l
	}
	f := strings.Fields(string(b))
	for i := 0; i < 3 && i < len(f); i++ {
		l[i], _ = strconv.ParseFloat(f[i], 64)
	}
	return l
}

// diskBytes is the apparent size of every file under dir.
func diskBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// cpuTicks reads the machine's busy and total CPU time from /proc/stat,
// in clock ticks summed over every CPU; zeros if unknown.
func cpuTicks() (busy, total uint64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0
	}
	for i, s := range f[1:] {
		n, _ := strconv.ParseUint(s, 10, 64)
		total += n
		// idle and iowait are the 4th and 5th columns.
		if i != 3 && i != 4 {
			busy += n
		}
	}
	// guest time is already counted in user time.
	if len(f) > 10 {
		g1, _ := strconv.ParseUint(f[9], 10, 64)
		g2, _ := strconv.ParseUint(f[10], 10, 64)
		busy -= g1 + g2
		total -= g1 + g2
	}
	return busy, total
}
