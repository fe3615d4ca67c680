// Package wanterr is the one check that table-driven tests repeat: the
// error a case wants, or none. It holds no fixtures and no other
// assertions; tests of any folder may import it, non-test code must not.
package wanterr
