// Command pki writes the loopback PKI of the e2e control plane into a directory:
//
//	ca.crt, ca.key                      the cluster CA (client and serving certs)
//	apiserver.crt, apiserver.key        serving cert for 127.0.0.1, localhost and the kubernetes Service names
//	<user>.crt, <user>.key              client certs: kube-scheduler, kube-controller-manager,
//	                                    front-proxy-client (the apiserver's, for requestheader auth)
//	sa.key, sa.pub                      the service-account signing key pair
//	tokens.csv, admin.token             a static admin token (group system:masters)
//
// Everything is ECDSA P-256, valid for 7 days: it only lives as long as one run.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"flag"
	"log"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

var dir = flag.String("dir", "", "output directory (required)")

func main() {
	flag.Parse()
	if *dir == "" {
		log.Fatal("pki: -dir is required")
	}
	caKey := newKey("ca")
	caTemplate := template(pkix.Name{CommonName: "dralloc-e2e-ca"})
	caTemplate.IsCA = true
	caTemplate.BasicConstraintsValid = true
	caTemplate.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	ca := sign("ca", caTemplate, caKey, nil, caKey)

	serving := template(pkix.Name{CommonName: "kube-apiserver"})
	serving.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	serving.IPAddresses = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")}
	serving.DNSNames = []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc.cluster.local"}
	sign("apiserver", serving, newKey("apiserver"), ca, caKey)

	for _, user := range []string{"kube-scheduler", "kube-controller-manager", "front-proxy-client"} {
		client := template(pkix.Name{CommonName: "system:" + user})
		client.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		sign(user, client, newKey(user), ca, caKey)
	}

	saKey := newKey("sa")
	public, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	check(err)
	write("sa.pub", "PUBLIC KEY", public)

	token := make([]byte, 24)
	_, err = rand.Read(token)
	check(err)
	check(os.WriteFile(filepath.Join(*dir, "admin.token"), []byte(hex.EncodeToString(token)), 0o600))
	line := hex.EncodeToString(token) + ",dralloc-e2e-admin,dralloc-e2e-admin,system:masters\n"
	check(os.WriteFile(filepath.Join(*dir, "tokens.csv"), []byte(line), 0o600))
}

func template(subject pkix.Name) *x509.Certificate {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	check(err)
	now := time.Now()
	return &x509.Certificate{SerialNumber: serial, Subject: subject, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(7 * 24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
}

// newKey makes a key and writes it as <name>.key.
func newKey(name string) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	check(err)
	der, err := x509.MarshalECPrivateKey(key)
	check(err)
	write(name+".key", "EC PRIVATE KEY", der)
	return key
}

// sign issues the certificate (self-signed when parent is nil) and writes it as <name>.crt.
func sign(name string, cert *x509.Certificate, key *ecdsa.PrivateKey, parent *x509.Certificate,
	parentKey *ecdsa.PrivateKey) *x509.Certificate {
	if parent == nil {
		parent = cert
	}
	der, err := x509.CreateCertificate(rand.Reader, cert, parent, &key.PublicKey, parentKey)
	check(err)
	write(name+".crt", "CERTIFICATE", der)
	parsed, err := x509.ParseCertificate(der)
	check(err)
	return parsed
}

func write(name, kind string, der []byte) {
	check(os.WriteFile(filepath.Join(*dir, name), pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600))
}

func check(err error) {
	if err != nil {
		log.Fatalf("pki: %v", err)
	}
}
