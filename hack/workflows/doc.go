// Package workflows holds the local checks of .github: what the workflows
// and the vendor action claim or do that can be proven on this machine,
// without GitHub's runners. Its tests read the workflow files and run the
// action's script with a stub in place of the binary it builds; the
// workflows themselves are linted by `make actionlint`.
package workflows
