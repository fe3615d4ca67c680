// Package pki makes the fake-zones cluster's certificates and
// kubeconfigs: one CA, the API server's serving certificate, a client
// certificate per identity, and the service-account signing key pair.
// ECDSA P-256 keeps a fresh set under 50 ms, so every "up" makes its own.
//
// Its keys are for throw-away local clusters: it must not be used for
// anything that outlives the work directory.
package pki
