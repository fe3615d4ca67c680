package e2e

import (
	"context"
	"os"
	"os/exec"
	"strings"

	"k8s.io/kubernetes/test/e2e/framework"
)

// runCommand runs one of the driver ext file's commands (key is its path
// in the file, for messages) with sh -c and KUBECONFIG set to the suite's
// kubeconfig, so that a command acting on the cluster acts on this one;
// env adds variables (NAME=value) the command takes.
func runCommand(ctx context.Context, key, command string, env ...string) {
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+framework.TestContext.KubeConfig), env...)
	out, err := cmd.CombinedOutput()
	framework.ExpectNoError(err, "driver ext %s %q: %s", key, command, out)
	framework.Logf("driver ext %s %q: %s", key, command, strings.TrimSpace(string(out)))
}
