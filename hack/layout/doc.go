// Package layout holds the repository's written map to its tree: the
// folder table of README.md, the package table of ARCHITECTURE.md, and the
// convention that every binary is built from <area>/cmd/<name>. Its tests
// fail when a table names a folder that does not exist or leaves one out,
// and when a main package lives anywhere else (the e2e suite, built with
// `go test -c`, is a test package and not a main one), and when a
// Markdown file links to a path that a move left behind.
//
// It reads Markdown and the tree; it never writes either.
package layout
