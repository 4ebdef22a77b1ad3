package compose

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// stage is one stage of a multi-stage Dockerfile.
type stage struct {
	name       string
	from       string
	entrypoint []string
	lines      []string // instructions, continuation lines joined
}

// readDockerfile returns the stages of a Dockerfile by name, in order.
// It knows just enough of the format for our checks: FROM ... AS name,
// exec-form ENTRYPOINT, and backslash continuations.
func readDockerfile(path string) ([]*stage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var stages []*stage
	var cur *stage
	var pending string
	sc := bufio.NewScanner(f)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && pending == "") {
			continue
		}
		if cont, ok := strings.CutSuffix(line, "\\"); ok {
			pending += cont + " "
			continue
		}
		line, pending = pending+line, ""
		word, rest, _ := strings.Cut(line, " ")
		switch strings.ToUpper(word) {
		case "ARG":
			if cur == nil {
				continue // a global build argument
			}
		case "FROM":
			fields := strings.Fields(rest)
			cur = &stage{from: fields[0]}
			if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
				cur.name = fields[2]
			}
			stages = append(stages, cur)
			continue
		case "ENTRYPOINT":
			if cur == nil {
				return nil, fmt.Errorf("%s:%d: ENTRYPOINT before any FROM", path, lineNo)
			}
			if err := json.Unmarshal([]byte(rest), &cur.entrypoint); err != nil {
				return nil, fmt.Errorf("%s:%d: ENTRYPOINT is not in exec form (a JSON array): %w", path, lineNo, err)
			}
		}
		if cur == nil {
			return nil, fmt.Errorf("%s:%d: %s before any FROM", path, lineNo, word)
		}
		cur.lines = append(cur.lines, line)
	}
	return stages, sc.Err()
}

func stageNamed(stages []*stage, name string) *stage {
	for _, s := range stages {
		if s.name == name {
			return s
		}
	}
	return nil
}

// has reports whether some instruction of s contains all of parts.
func (s *stage) has(parts ...string) bool {
	for _, l := range s.lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}
