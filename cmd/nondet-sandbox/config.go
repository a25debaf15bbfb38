package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/spf13/pflag"
)

// A project's settings live in pyproject.toml under [tool.nondet-sandbox],
// found from the first target upward as ruff and mypy find theirs. A flag
// given on the command line wins over the file. Each key is the flag of
// the same name, so the file takes exactly what the flag takes.
//
//	[tool.nondet-sandbox]
//	runtime = "auto"
//	runs = 3
//	jobs = 2
//	python = ".venv/bin/python"      # relative to the file
//	include = ["src/**/*.py"]        # relative to the file
//	exclude = ["tests", "**/_vendor/**"]
//	order-free = ["src/util.py::merge:items"]
//	call-timeout = "10s"
//	private = false
//	memory = "2GiB"
//	package = ["requests"]           # installed distributions to audit

// configKeys are the keys the file may set, each a flag of run.
var configKeys = []string{"runtime", "runs", "jobs", "python", "include", "exclude", "order-free", "call-timeout",
	"private", "memory", "pids", "cpus", "smell-runs", "format", "seccomp", "userns", "image", "oci-runtime", "package", "all-packages"}

// pathKeys hold paths, which the file gives relative to itself.
var pathKeys = map[string]bool{"python": true}

// findConfig finds the pyproject.toml with a [tool.nondet-sandbox] table
// nearest above dir; "" when there is none.
func findConfig(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		path := filepath.Join(d, "pyproject.toml")
		if _, err := os.Stat(path); err == nil {
			has, err := hasTable(path)
			if err != nil {
				return "", err
			}
			if has {
				return path, nil
			}
		}
		if d == filepath.Dir(d) {
			return "", nil
		}
	}
}

func hasTable(path string) (bool, error) {
	var doc struct {
		Tool map[string]toml.Primitive `toml:"tool"`
	}
	if _, err := toml.DecodeFile(path, &doc); err != nil {
		return false, usageErrorf("%s: %v", path, err)
	}
	_, ok := doc.Tool["nondet-sandbox"]
	return ok, nil
}

// readConfig reads the [tool.nondet-sandbox] table of path, or the whole
// file when it is not a pyproject.toml.
func readConfig(path string) (map[string]any, error) {
	var doc map[string]any
	if _, err := toml.DecodeFile(path, &doc); err != nil {
		return nil, usageErrorf("%s: %v", path, err)
	}
	if filepath.Base(path) != "pyproject.toml" {
		if t, ok := doc["tool"].(map[string]any); ok {
			if table, ok := t["nondet-sandbox"].(map[string]any); ok {
				return table, nil
			}
		}
		return doc, nil
	}
	t, _ := doc["tool"].(map[string]any)
	table, _ := t["nondet-sandbox"].(map[string]any)
	return table, nil
}

// applyConfig sets every flag that the command line did not set from the
// config file path. It says which key is wrong, and what to write.
func applyConfig(fs *pflag.FlagSet, path string) error {
	table, err := readConfig(path)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	keys := make([]string, 0, len(table))
	for k := range table {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		flag := fs.Lookup(key)
		if flag == nil || !slices.Contains(configKeys, key) {
			return usageErrorf("%s: [tool.nondet-sandbox] has no key %q; the keys are: %s", path, key, strings.Join(configKeys, ", "))
		}
		if flag.Changed {
			continue
		}
		var values []string
		switch v := table[key].(type) {
		case []any:
			for _, e := range v {
				s, ok := e.(string)
				if !ok {
					return usageErrorf("%s: %s: give a list of strings", path, key)
				}
				values = append(values, s)
			}
		case string:
			values = []string{v}
		case int64, bool, float64:
			values = []string{fmt.Sprint(v)}
		default:
			return usageErrorf("%s: %s: %v is not a value this key takes", path, key, v)
		}
		for _, v := range values {
			if pathKeys[key] && (strings.Contains(v, "/") || strings.Contains(v, string(filepath.Separator))) && !filepath.IsAbs(v) {
				v = filepath.Join(dir, v)
			}
			if err := fs.Set(key, v); err != nil {
				return usageErrorf("%s: %s = %q: %v", path, key, v, err)
			}
		}
	}
	return nil
}

// configure applies the project's config file to the flags the command
// line left alone: --config FILE, else the pyproject.toml found from the
// first target (or the working directory) upward, unless --no-config. It returns the file's folder,
// which include and exclude patterns are relative to ("" for none).
func (o *runOptions) configure(fs *pflag.FlagSet, args []string) (string, error) {
	if o.noConfig {
		return "", nil
	}
	path := o.config
	if path == "" {
		start := "."
		if len(args) > 0 {
			start, _, _ = strings.Cut(args[0], "::")
		}
		abs, err := filepath.Abs(start)
		if err != nil {
			return "", nil
		}
		if st, err := os.Stat(abs); err == nil && !st.IsDir() {
			abs = filepath.Dir(abs)
		}
		if path, err = findConfig(abs); err != nil || path == "" {
			return "", err
		}
	} else if _, err := os.Stat(path); err != nil {
		return "", usageErrorf("--config: %v", err)
	}
	if err := applyConfig(fs, path); err != nil {
		return "", err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	return filepath.Dir(abs), nil
}
