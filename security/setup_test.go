package security

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"go.uber.org/goleak"

	"github.com/jetflow/jetflow/embedded"
	"github.com/jetflow/jetflow/natstest"
	"github.com/jetflow/jetflow/provision"
	"github.com/jetflow/jetflow/registry"
	"github.com/jetflow/jetflow/subjects"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...) }

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// lifetime is a context that ends when the test's cleanup runs: for
// components whose Start context bounds their whole life (the worker).
func lifetime(t testing.TB) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}

// pki is a throwaway certificate authority and a server certificate for
// loopback, made for one test: no private key is ever committed.
type pki struct {
	cert, key string
	pool      *x509.CertPool
}

func newPKI(t testing.TB) pki {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "jetflow test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p := pki{cert: filepath.Join(dir, "server.pem"), key: filepath.Join(dir, "server-key.pem"), pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	write := func(path, typ string, der []byte) {
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(p.cert, "CERTIFICATE", der)
	write(p.key, "EC PRIVATE KEY", keyDER)
	return p
}

// deployment is a nats-server configured exactly as ServerConfig renders
// it (TLS required, one nkey user per role), provisioned by the operator.
type deployment struct {
	srv   *embedded.Server
	names subjects.Names
	keys  map[string]nkeys.KeyPair
	pki   pki
	conf  string
}

// secured starts a server from the rendered configuration of a
// deployment serving tasks. Each user's public nkey and the TLS files are
// given as variables ahead of the configuration, as the environment would.
func secured(t *testing.T, tasks []registry.TaskRef, triggers ...string) *deployment {
	t.Helper()
	d := &deployment{names: subjects.Must(""), keys: map[string]nkeys.KeyPair{}, pki: newPKI(t)}
	users, err := DeploymentUsers(d.names, tasks, triggers...)
	if err != nil {
		t.Fatal(err)
	}
	var vars strings.Builder
	for _, u := range users {
		kp, err := nkeys.CreateUser()
		if err != nil {
			t.Fatal(err)
		}
		pub, _ := kp.PublicKey()
		d.keys[u.Name] = kp
		fmt.Fprintf(&vars, "%s: %q\n", NKeyVar(u.Name), pub)
	}
	fmt.Fprintf(&vars, "JETFLOW_TLS_CERT: %q\nJETFLOW_TLS_KEY: %q\n", d.pki.cert, d.pki.key)
	d.conf = ServerConfig{Users: users}.Render()
	var confErr error
	d.srv = natstest.Server(t, natstest.WithConfig(func(c *embedded.Config) {
		c.Customize = func(o *server.Options) {
			// The test's port and store; everything else as configured.
			host, port, store := o.Host, o.Port, o.StoreDir
			o.StoreDir = "" // the file names one; two are an error
			confErr = o.ProcessConfigString(vars.String() + d.conf)
			o.Host, o.Port, o.StoreDir = host, port, store
		}
	}))
	if confErr != nil {
		t.Fatalf("the rendered configuration does not load: %v", confErr)
	}
	op := d.connect(t, UserOperator)
	if err := provision.Provision(testCtx(t, 30*time.Second), op.js, d.names, provision.ProvisionOptions{}); err != nil {
		t.Fatal(err)
	}
	return d
}

// conn is a role's connection; it collects the permission violations the
// server reports to it.
type conn struct {
	*nats.Conn
	js   jetstream.JetStream
	user string

	mu         sync.Mutex
	violations []string
}

// connectOptions are what a client of user passes: its nkey, TLS with the
// test CA, and its private inbox prefix.
func (d *deployment) connectOptions(user string) []nats.Option {
	kp := d.keys[user]
	pub, _ := kp.PublicKey()
	return []nats.Option{
		nats.Nkey(pub, kp.Sign),
		nats.Secure(tlsConfig(d.pki.pool)),
		nats.CustomInboxPrefix(InboxPrefix(user)),
		nats.Name("security-test-" + user),
	}
}

func (d *deployment) connect(t *testing.T, user string) *conn {
	t.Helper()
	c := &conn{user: user}
	opts := append(d.connectOptions(user), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) {
			c.mu.Lock()
			c.violations = append(c.violations, err.Error())
			c.mu.Unlock()
		}
	}))
	nc, err := nats.Connect(d.srv.ClientURL(), opts...)
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	c.Conn = nc
	if c.js, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	return c
}

// seen reports whether the server refused subject to this connection.
func (c *conn) seen(subject string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range c.violations {
		if strings.Contains(v, `"`+subject+`"`) {
			return true
		}
	}
	return false
}

func (c *conn) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.violations...)
}

// denied runs op (which should block until ctx ends or fail) and waits
// until the server reports a permission violation on subject. A request
// the server drops never gets a reply, so op's context is cancelled as
// soon as the violation is seen rather than left to time out.
func (c *conn) denied(t *testing.T, what, subject string, op func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	done := make(chan error, 1)
	go func() { done <- op(ctx) }()
	natstest.WaitFor(t, 15*time.Second, c.user+" refused: "+what, func() error {
		if c.seen(subject) {
			return nil
		}
		return fmt.Errorf("no permission violation for %q yet (seen: %v)", subject, c.all())
	})
	cancel()
	if err := <-done; err == nil {
		t.Errorf("%s: %s succeeded although the server refused %q", c.user, what, subject)
	}
}

func tlsConfig(pool *x509.CertPool) *tls.Config {
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// quiet is the logger of components whose logs a test does not read; set
// SECURITY_TEST_LOG=1 to see them.
func quiet() *slog.Logger {
	if os.Getenv("SECURITY_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}
