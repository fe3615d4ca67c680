package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/zonepath/zonepath/deploy/rbaccheck"
)

func main() {
	usage := flag.String("usage", "deploy/rbac/api-usage.yaml", "the usage file: what each component calls")
	namespace := flag.String("namespace", "zonepath-system", "namespace of the components' ServiceAccounts")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: rbac-audit [--usage FILE] [--namespace NS] AUDIT-LOG...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*usage, *namespace, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "rbac-audit:", err)
		os.Exit(1)
	}
}

func run(usagePath, namespace string, logs []string) error {
	u, err := rbaccheck.ReadUsage(usagePath)
	if err != nil {
		return err
	}
	events, err := rbaccheck.ReadAudit(logs...)
	if err != nil {
		return err
	}
	fmt.Printf("rbac-audit: %d requests in %d audit logs against %s\n", len(events), len(logs), usagePath)
	problems := rbaccheck.CheckAudit(events, u, namespace, os.Stdout)
	for _, p := range problems {
		fmt.Println("rbac-audit: FAIL:", p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d problems; deploy/rbac or %s is wrong", len(problems), usagePath)
	}
	fmt.Println("rbac-audit: every call granted, listed, and every common call seen")
	return nil
}
