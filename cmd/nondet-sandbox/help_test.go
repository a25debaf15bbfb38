package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestHelpPlaceholders: pflag takes a flag's placeholder from the first
// backquoted word of its usage, so a usage quoting a command printed
// "--shard nondet-sandbox merge". Every placeholder is its type's name or
// one written for it in capitals.
func TestHelpPlaceholders(t *testing.T) {
	written := regexp.MustCompile(`^[A-Z][A-Z0-9_./:-]*$`)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			name, _ := pflag.UnquoteUsage(f)
			if strings.Contains(f.Usage, "`") && !written.MatchString(name) {
				t.Errorf("%s --%s: placeholder %q from its usage's backquotes", c.CommandPath(), f.Name, name)
			}
			if strings.ContainsAny(name, " \t") {
				t.Errorf("%s --%s: placeholder %q has a space", c.CommandPath(), f.Name, name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand())
}
