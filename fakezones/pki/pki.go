package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/keyutil"

	certutil "k8s.io/client-go/util/cert"
)

// validity is long enough for any test run and short enough that a
// leaked key is worthless soon.
const validity = 7 * 24 * time.Hour

// CA signs every certificate of one cluster.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	Dir  string
}

// NewCA makes a CA and writes ca.crt and ca.key into dir.
func NewCA(dir, name string) (*CA, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: name}, key)
	if err != nil {
		return nil, fmt.Errorf("making the CA certificate: %w", err)
	}
	ca := &CA{Cert: cert, Key: key, Dir: dir}
	return ca, ca.write("ca", cert, key)
}

// CertPath and KeyPath name a pair written by this CA.
func (ca *CA) CertPath(name string) string { return filepath.Join(ca.Dir, name+".crt") }

// KeyPath names the key of a pair written by this CA.
func (ca *CA) KeyPath(name string) string { return filepath.Join(ca.Dir, name+".key") }

// Serving issues a serving certificate for hosts (DNS names or IPs).
func (ca *CA) Serving(name string, hosts ...string) error {
	tmpl := template(name, nil, x509.ExtKeyUsageServerAuth)
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return ca.issue(name, tmpl)
}

// Client issues a client certificate for user in groups.
func (ca *CA) Client(name, user string, groups ...string) error {
	return ca.issue(name, template(user, groups, x509.ExtKeyUsageClientAuth))
}

// Kubeconfig writes a kubeconfig at path for the client pair name.
func (ca *CA) Kubeconfig(path, server, name string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["fakezones"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: ca.CertPath("ca")}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificate: ca.CertPath(name), ClientKey: ca.KeyPath(name)}
	cfg.Contexts["fakezones"] = &clientcmdapi.Context{Cluster: "fakezones", AuthInfo: name}
	cfg.CurrentContext = "fakezones"
	return clientcmd.WriteToFile(*cfg, path)
}

// ServiceAccountKey writes the key pair that signs service-account
// tokens: name.key (private) and name.pub.
func (ca *CA) ServiceAccountKey(name string) error {
	key, err := newKey()
	if err != nil {
		return err
	}
	priv, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return err
	}
	pub, err := publicPEM(key.Public())
	if err != nil {
		return err
	}
	if err := keyutil.WriteKey(ca.KeyPath(name), priv); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(ca.Dir, name+".pub"), pub, 0o644)
}

func (ca *CA) issue(name string, tmpl *x509.Certificate) error {
	key, err := newKey()
	if err != nil {
		return err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return fmt.Errorf("issuing %s: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return err
	}
	return ca.write(name, cert, key)
}

func (ca *CA) write(name string, cert *x509.Certificate, key crypto.Signer) error {
	if err := os.MkdirAll(ca.Dir, 0o700); err != nil {
		return err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return err
	}
	if err := keyutil.WriteKey(ca.KeyPath(name), keyPEM); err != nil {
		return err
	}
	certPEM, err := certutil.EncodeCertificates(cert)
	if err != nil {
		return err
	}
	return certutil.WriteCert(ca.CertPath(name), certPEM)
}

func template(cn string, orgs []string, usage x509.ExtKeyUsage) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
}

func newKey() (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating a key: %w", err)
	}
	return key, nil
}

func publicPEM(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}
