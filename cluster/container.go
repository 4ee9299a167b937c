package cluster

import (
	"fmt"
	"strings"
)

// AppContainer picks the application container of a Deployment among its
// containers' names: the one the action names, else the one named like the
// Deployment, else the only one. Anything else is an error, and the rollback
// then fails without changing anything (seed 000, step 1).
func AppContainer(deployment, named string, containers []string) (int, error) {
	find := func(name string) int {
		for i, c := range containers {
			if c == name {
				return i
			}
		}
		return -1
	}
	if named != "" {
		if i := find(named); i >= 0 {
			return i, nil
		}
		return -1, fmt.Errorf("container: Deployment %s has no container %q (it has %s)", deployment, named, list(containers))
	}
	if i := find(deployment); i >= 0 {
		return i, nil
	}
	if len(containers) == 1 {
		return 0, nil
	}
	return -1, fmt.Errorf("container: Deployment %s has %d containers (%s) and none is named like it; name the application container in rollback.container",
		deployment, len(containers), list(containers))
}

func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
