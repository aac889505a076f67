package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/rnnaudit/rnnaudit/internal/userfile"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// pathKeys are the config keys that name files; relative paths in a
// config file are relative to the file's directory.
var pathKeys = map[string]bool{"model": true, "data": true, "test": true, "calibration": true, "out": true, "json": true}

// applyConfig sets, from the YAML file at path, every flag of fs that the
// command line did not set. The file is a mapping whose keys are flag
// names without the dashes; a list gives several values to a flag that
// takes several (features, out). Problems with the file's contents are
// usage errors that name the file and line.
func applyConfig(fs *pflag.FlagSet, path string) error {
	data, err := userfile.ReadFile(path, "--config", userfile.Config)
	if err != nil {
		return err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return usagef("--config %s: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 {
		return nil // an empty file
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return usagef("%s:%d: the config file must be a mapping of flag names to values, such as \"alpha: 0.1\"", path, root.Line)
	}
	dir := filepath.Dir(path)
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		name := k.Value
		at := fmt.Sprintf("%s:%d", path, k.Line)
		f := fs.Lookup(name)
		if f == nil || name == "config" {
			return usagef("%s: unknown key %q%s", at, name, suggest(fs, name))
		}
		if seen[name] {
			return usagef("%s: key %q is given twice", at, name)
		}
		seen[name] = true
		if fs.Changed(name) {
			continue // the command line wins
		}
		var vals []string
		written := v // what the file holds, an alias as written
		v = resolveAlias(v)
		switch v.Kind {
		case yaml.ScalarNode:
			if v.Tag == "!!null" {
				continue
			}
			vals = []string{v.Value}
		case yaml.SequenceNode:
			if !multi(f) {
				return usagef("%s: %s takes one value, not a list", at, name)
			}
			for _, item := range v.Content {
				if resolveAlias(item).Kind != yaml.ScalarNode {
					return usagef("%s:%d: the items of %s must be plain values, not %s", path, item.Line, name, yamlKind(item))
				}
				item = resolveAlias(item)
				vals = append(vals, item.Value)
			}
		default:
			return usagef("%s: %s must be a value or a list of values, not %s", at, name, yamlKind(written))
		}
		for _, s := range vals {
			if pathKeys[name] && s != "" && !filepath.IsAbs(s) {
				s = filepath.Join(dir, s)
			}
			if f.Value.Type() == "stringSlice" && v.Kind == yaml.SequenceNode && strings.ContainsAny(s, ",\"") {
				// pflag splits slice values as CSV: quote a list item,
				// which is one value. A plain value ("features: a,b")
				// is split like the flag.
				s = `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
			}
			if err := fs.Set(name, s); err != nil {
				return usagef("%s: %s: invalid value %q: %v", at, name, s, stripPflag(err))
			}
		}
	}
	return nil
}

// resolveAlias is the node an alias (*name) stands for, n itself when it
// is not an alias.
func resolveAlias(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

// yamlKind names what a node of a config file holds, as written: "a
// mapping", "an alias (*m) of a mapping".
func yamlKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return "a value"
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.AliasNode:
		if n.Alias == nil {
			return fmt.Sprintf("an alias (*%s)", terminalSafe(n.Value))
		}
		return fmt.Sprintf("an alias (*%s) of %s", terminalSafe(n.Value), yamlKind(n.Alias))
	}
	return "a document"
}

// stripPflag shortens pflag's error for a value that is not a number
// ("invalid argument ... for ... flag: strconv.ParseFloat: parsing "x":
// invalid syntax") to "not a number (invalid syntax)".
func stripPflag(err error) string {
	if ne := (*strconv.NumError)(nil); errors.As(err, &ne) {
		return "not a number (" + ne.Err.Error() + ")"
	}
	return err.Error()
}

// multi reports whether a flag takes several values.
func multi(f *pflag.Flag) bool {
	switch f.Value.Type() {
	case "stringSlice", "stringArray":
		return true
	}
	return false
}

// suggest names the flag a mistyped key probably meant.
func suggest(fs *pflag.FlagSet, name string) string {
	norm := strings.ToLower(strings.NewReplacer("_", "-", " ", "-").Replace(strings.TrimLeft(name, "-")))
	if f := fs.Lookup(norm); f != nil && norm != "config" {
		return fmt.Sprintf(": did you mean %q?", norm)
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name != "config" {
			names = append(names, f.Name)
		}
	})
	sort.Strings(names)
	return " (the keys are the flag names: " + strings.Join(names, ", ") + ")"
}
