// Package yamlfile reads the YAML files zonepath's commands take (the
// driver's topology file, the cluster file, the e2e driver extension, the
// sanity config, the RBAC usage file), so that each names the file the
// same way in its errors. Decoding and validating stay with the package
// that owns the format; this one only reads and names.
package yamlfile
