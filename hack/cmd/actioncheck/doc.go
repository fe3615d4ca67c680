// Command actioncheck covers what actionlint leaves out of composite
// actions (.github/actions/*/action.yml). actionlint reads an action's
// metadata only where a workflow uses the action, to check the inputs the
// workflow passes; it never lints the action's own steps. actioncheck
// checks the rules composite steps have beyond workflow steps (a shell on
// every run step, only the keys a composite step takes) and then writes
// each action's steps as a workflow_call workflow taking the action's
// inputs, so that actionlint lints the steps' expressions, inputs
// references, scripts (shellcheck) and actions used like a workflow's.
//
// usage: actioncheck --out DIR action.yml...
//
// It must not duplicate actionlint's own checks, only add what actionlint
// cannot see.
package main
