package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"gopkg.in/yaml.v3"
)

// LoadOver returns base overlaid with the YAML file at path. Keys the file
// does not mention keep base's values. Unknown keys, repeated keys and bad
// values are errors naming the file, the line and the key.
func LoadOver(base Config, path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return base, fmt.Errorf("config file: %w", err)
	}
	cfg, err := Parse(base, data)
	if err != nil {
		return base, fmt.Errorf("config file %s: %w", path, err)
	}
	return cfg, nil
}

// Parse overlays base with a YAML document. The document is read as a node
// tree rather than straight into Config so that every value goes through the
// same parser as its environment variable and flag, and every error can name
// its key and line (yaml's own type errors name neither).
func Parse(base Config, data []byte) (Config, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return base, nil // an empty file changes nothing
	} else if err != nil {
		return base, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return base, errors.New("expected one YAML document, found more (a second '---')")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return base, nil // a file holding only comments
	}
	if root.Kind != yaml.MappingNode {
		return base, fmt.Errorf("line %d: expected a mapping of keys such as \"addr: 127.0.0.1:7717\"", root.Line)
	}
	cfg := base
	seen := make(map[string]int)
	for i := 0; i+1 < len(root.Content); i += 2 {
		kn, vn := root.Content[i], root.Content[i+1]
		name := kn.Value
		if !isKey(name) {
			return base, fmt.Errorf("line %d: %w", kn.Line, unknownKey(name))
		}
		if prev, dup := seen[name]; dup {
			return base, fmt.Errorf("line %d: key %q already set on line %d", kn.Line, name, prev)
		}
		seen[name] = kn.Line
		if name == "tokens" {
			// A list: its errors name their own lines.
			if err := parseTokensNode(&cfg, vn); err != nil {
				return base, err
			}
			continue
		}
		if name == "revoked_certificates" {
			if err := parseRevokedNode(&cfg, vn); err != nil {
				return base, err
			}
			continue
		}
		if name == "push_receivers" {
			if err := parsePushReceiversNode(&cfg, vn); err != nil {
				return base, err
			}
			continue
		}
		if name == "remotes" {
			if err := parseRemotesNode(&cfg, vn); err != nil {
				return base, err
			}
			continue
		}
		if vn.Kind != yaml.ScalarNode || vn.Tag == "!!null" {
			return base, fmt.Errorf("line %d: %s: expected a single value, got %s", vn.Line, name, describe(vn))
		}
		if err := Set(&cfg, name, vn.Value); err != nil {
			return base, fmt.Errorf("line %d: %w", vn.Line, err)
		}
	}
	return cfg, nil
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		if n.Tag != "!!null" {
			return "a single value" // never the value: it may be a secret
		}
	}
	return "nothing"
}
