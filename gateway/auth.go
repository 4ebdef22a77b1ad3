package gateway

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/jetflow/jetflow/subjects"
)

// Role is what a gateway token may do: the roles of docs/SECURITY.md, as
// far as the gateway's endpoints reach.
type Role string

// The roles a token can hold.
const (
	// RoleOperator may use every endpoint.
	RoleOperator Role = "operator"
	// RoleApp starts runs, sends events, cancels, and reads runs
	// (a publisher and an observer): the only role besides the operator
	// that may start a run and wait for its result.
	RoleApp Role = "app"
	// RolePublisher starts runs, sends events and cancels.
	RolePublisher Role = "publisher"
	// RoleObserver reads runs: status, result (waiting) and lists.
	RoleObserver Role = "observer"
	// RoleWorker takes, heartbeats and completes invocations: of one task
	// version when the grant names one, else of every task.
	RoleWorker Role = "worker"
)

// action is one thing an endpoint does, which a role may or may not do.
type action int

const (
	actStart action = iota
	actEvent
	actCancel
	actRead
	actWork
)

func (a action) String() string {
	return [...]string{"start runs", "send events", "cancel runs", "read runs", "serve tasks"}[a]
}

// may reports whether the role may take the action.
func (r Role) may(a action) bool {
	switch r {
	case RoleOperator:
		return true
	case RoleApp:
		return a != actWork
	case RolePublisher:
		return a == actStart || a == actEvent || a == actCancel
	case RoleObserver:
		return a == actRead
	case RoleWorker:
		return a == actWork
	}
	return false
}

// Grant is one bearer token and what it may do.
type Grant struct {
	Role Role
	// Task and Version limit a worker's grant to one task version; empty,
	// a worker may serve every task.
	Task, Version string
	// Token is the bearer token, at least MinTokenLength characters.
	Token string
}

// MinTokenLength is the shortest token accepted.
const MinTokenLength = 16

// Name is how logs and errors name the grant, without its token.
func (g Grant) Name() string {
	if g.Task != "" {
		return string(g.Role) + ":" + g.Task + "@" + g.Version
	}
	return string(g.Role)
}

// serves reports whether the grant may serve task version task@version.
func (g Grant) serves(task, version string) bool {
	return g.Role == RoleOperator || (g.Role == RoleWorker && (g.Task == "" || (g.Task == task && g.Version == version)))
}

// ParseGrants reads grants written ROLE=TOKEN, comma-separated, where ROLE
// is operator, app, publisher, observer, worker or worker:TASK@VERSION:
// "app=s3cr3t-app-token-0001,worker:check-stock@1=s3cr3t-worker-0001".
// A token may not hold a comma; two grants may not share a token.
func ParseGrants(s string) ([]Grant, error) {
	var out []Grant
	seen := map[string]string{}
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		role, tok, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("entry %d is not ROLE=TOKEN", i+1)
		}
		g := Grant{Role: Role(role), Token: tok}
		if r, tv, ok := strings.Cut(role, ":"); ok {
			task, version, ok := strings.Cut(tv, "@")
			if r != string(RoleWorker) || !ok {
				return nil, fmt.Errorf("entry %d: role %q: only a worker is limited to a task version, written worker:TASK@VERSION", i+1, role)
			}
			if err := subjects.CheckTask(task); err != nil {
				return nil, fmt.Errorf("entry %d: role %q: %w", i+1, role, err)
			}
			if err := subjects.CheckVersion(version); err != nil {
				return nil, fmt.Errorf("entry %d: role %q: %w", i+1, role, err)
			}
			g = Grant{Role: RoleWorker, Task: task, Version: version, Token: tok}
		}
		switch g.Role {
		case RoleOperator, RoleApp, RolePublisher, RoleObserver, RoleWorker:
		default:
			return nil, fmt.Errorf("entry %d: role %q is not operator, app, publisher, observer, worker or worker:TASK@VERSION", i+1, role)
		}
		if len(tok) < MinTokenLength {
			return nil, fmt.Errorf("entry %d (%s): the token has %d characters, fewer than %d", i+1, g.Name(), len(tok), MinTokenLength)
		}
		if prev, dup := seen[tok]; dup {
			return nil, fmt.Errorf("entry %d (%s): the same token as %s: give each grant its own", i+1, g.Name(), prev)
		}
		seen[tok] = g.Name()
		out = append(out, g)
	}
	if len(out) == 0 {
		return nil, errors.New("no grants: give at least one ROLE=TOKEN")
	}
	return out, nil
}

// keyed is a grant with its token's digest, compared in constant time.
type keyed struct {
	Grant
	sum [sha256.Size]byte
}

func keyGrants(gs []Grant) []keyed {
	out := make([]keyed, len(gs))
	for i, g := range gs {
		out[i] = keyed{Grant: g, sum: sha256.Sum256([]byte(g.Token))}
	}
	return out
}

// authenticate finds the grant of the request's bearer token.
func (g *Gateway) authenticate(r *http.Request) (Grant, *Error) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if h == "" {
		return Grant{}, &Error{Status: http.StatusUnauthorized, Code: CodeUnauthenticated, Message: "no Authorization header: send Authorization: Bearer TOKEN", Pointer: "header:Authorization"}
	}
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return Grant{}, &Error{Status: http.StatusUnauthorized, Code: CodeUnauthenticated, Message: "the Authorization header is not Bearer TOKEN", Pointer: "header:Authorization"}
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	found := -1
	for i := range g.grants {
		if subtle.ConstantTimeCompare(sum[:], g.grants[i].sum[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Grant{}, &Error{Status: http.StatusUnauthorized, Code: CodeUnauthenticated, Message: "the bearer token is not one the gateway was given", Pointer: "header:Authorization"}
	}
	return g.grants[found].Grant, nil
}

// authorize authenticates the request and checks its grant may take
// every action in acts.
func (g *Gateway) authorize(r *http.Request, acts ...action) (Grant, *Error) {
	gr, err := g.authenticate(r)
	if err != nil {
		return gr, err
	}
	for _, a := range acts {
		if !gr.Role.may(a) {
			return gr, &Error{Status: http.StatusForbidden, Code: CodeForbidden, Message: fmt.Sprintf("role %s may not %s", gr.Name(), a)}
		}
	}
	return gr, nil
}
