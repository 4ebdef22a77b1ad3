package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/jetflow/jetflow/embedded"
)

// TestJoinSecuredNATS joins a NATS server that requires mutual TLS and a
// user (password or nkey), with the options given as flags or variables.
func TestJoinSecuredNATS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pki := newTestPKI(t, dir)
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := user.Seed()
	pub, _ := user.PublicKey()
	seedFile := filepath.Join(dir, "user.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := embedded.Start(ctx, embedded.Config{Listen: "127.0.0.1:-1", Logger: slog.New(slog.DiscardHandler), Customize: func(o *server.Options) {
		o.TLS, o.TLSVerify, o.TLSTimeout = true, true, 5
		o.TLSConfig = pki.serverTLS
		o.Users = []*server.User{{Username: "jf", Password: "s3cret"}}
		o.Nkeys = []*server.NkeyUser{{Nkey: pub}}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	url := srv.ClientURL()
	tlsFlags := []string{"--tls-ca", pki.ca, "--tls-cert", pki.cert, "--tls-key", pki.key}

	d := startDaemon(t, []string{"JETFLOW_NATS_PASSWORD=s3cret"},
		append([]string{"serve", "--nats", url, "--user", "jf", "--http", "127.0.0.1:-1"}, tlsFlags...)...)
	if code, body := d.get("/readyz"); code != 200 {
		t.Errorf("/readyz %d %q", code, body)
	}

	tlsEnv := []string{"JETFLOW_NATS_URL=" + url, "JETFLOW_NATS_TLS_CA=" + pki.ca, "JETFLOW_NATS_TLS_CERT=" + pki.cert, "JETFLOW_NATS_TLS_KEY=" + pki.key}
	cases := []struct {
		name string
		env  []string
		args []string
		exit int
		want string
	}{
		{"nkey from env", append(tlsEnv, "JETFLOW_NATS_NKEY="+seedFile), nil, 0, "no workflows deployed"},
		{"user from flags", nil, append([]string{"--nats", url, "--user", "jf", "--password", "s3cret"}, tlsFlags...), 0, "no workflows deployed"},
		{"wrong password", append(tlsEnv, "JETFLOW_NATS_USER=jf", "JETFLOW_NATS_PASSWORD=nope"), nil, 2, "authorization violation"},
		{"no client certificate", []string{"JETFLOW_NATS_NKEY=" + seedFile}, []string{"--nats", url, "--tls-ca", pki.ca}, 2, "connecting to"},
		{"unknown CA", append(tlsEnv, "JETFLOW_NATS_NKEY="+seedFile), []string{"--tls-ca", pki.cert}, 2, "certificate"},
	}
	for _, c := range cases {
		out, errOut, exit := runEnv(t, c.env, "", append([]string{"workflows"}, c.args...)...)
		if exit != c.exit || !strings.Contains(strings.ToLower(out+errOut), c.want) {
			t.Errorf("%s: exit %d, %q %q; want exit %d and %q", c.name, exit, out, errOut, c.exit, c.want)
		}
	}
	if exit := d.interrupt(); exit != 0 {
		t.Errorf("serve exit %d:\n%s", exit, d.stderr)
	}
}

type testPKI struct {
	ca, cert, key string // PEM files: the CA, a client certificate and its key
	serverTLS     *tls.Config
}

// newTestPKI makes a CA, a server certificate for 127.0.0.1 and a client
// certificate, all signed by the CA.
func newTestPKI(t *testing.T, dir string) testPKI {
	t.Helper()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "jetflow test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	leaf := func(serial int64, usage x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey) {
		k := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "jetflow test"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, k
	}
	srvDER, srvKey := leaf(2, x509.ExtKeyUsageServerAuth)
	cliDER, cliKey := leaf(3, x509.ExtKeyUsageClientAuth)
	p := testPKI{ca: filepath.Join(dir, "ca.pem"), cert: filepath.Join(dir, "client.pem"), key: filepath.Join(dir, "client-key.pem")}
	writePEM(t, p.ca, "CERTIFICATE", caDER)
	writePEM(t, p.cert, "CERTIFICATE", cliDER)
	keyDER, _ := x509.MarshalECPrivateKey(cliKey)
	writePEM(t, p.key, "EC PRIVATE KEY", keyDER)
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	p.serverTLS = &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}},
		ClientCAs:    pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
	}
	return p
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func writePEM(t *testing.T, name, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(name, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
