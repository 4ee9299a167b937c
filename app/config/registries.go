package config

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/ripcord/ripcord/gates/attest"
)

// Registries says how the gates reach image registries.
type Registries struct {
	// Insecure are hosts (host or host:port) reached over plain HTTP.
	Insecure []string
	// Auth is the path of a docker config.json whose "auths" give
	// credentials per registry; empty: anonymous.
	Auth string
}

func setInsecureRegistries(c *Config, v string) error {
	c.Registries.Insecure = nil
	if v == "" {
		return nil
	}
	for _, h := range strings.Split(v, ",") {
		h = strings.TrimSpace(h)
		if h == "" || strings.ContainsAny(h, "/ ") {
			return fmt.Errorf("%q is not a registry host (host or host:port, comma-separated)", h)
		}
		c.Registries.Insecure = append(c.Registries.Insecure, h)
	}
	return nil
}

func setRegistryAuth(c *Config, v string) error {
	if v != "" {
		if _, err := os.Stat(v); err != nil {
			return fmt.Errorf("docker config.json not readable: %w", err)
		}
		// Read as the gates read it: a file that is not a docker
		// config.json started the server and then failed every registry
		// gate, far from the setting that caused it.
		if _, err := attest.LoadDockerConfig(v); err != nil {
			return errors.New(strings.TrimPrefix(err.Error(), "registries.auth: "))
		}
	}
	c.Registries.Auth = v
	return nil
}
