package main

import (
	"fmt"
	"os"

	"github.com/ripcord/ripcord/repoconfig"
)

// runValidate checks .github/ripcord.yml files: each problem is printed as
// path:line:column: message; exit 1 on any problem.
func runValidate(args []string) int {
	if len(args) == 0 {
		args = []string{".github/ripcord.yml"}
	}
	bad := false
	for _, file := range args {
		data, err := os.ReadFile(file)
		if err != nil {
			fmt.Fprintln(os.Stderr, "ripcord validate:", err)
			return 2
		}
		problems := repoconfig.Validate(file, data)
		for _, p := range problems {
			fmt.Println(p)
		}
		if len(problems) > 0 {
			bad = true
			continue
		}
		fmt.Fprintf(os.Stderr, "%s: valid\n", file)
	}
	if bad {
		return 1
	}
	return 0
}
