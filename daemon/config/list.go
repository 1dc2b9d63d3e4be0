package config

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// parseList reads a list key of the file (tokens, remotes,
// push_receivers, revoked_certificates): "key:" with every entry
// commented out is an empty list; each entry is read by parse, and the
// list so far is checked by check after each, so that an error carries
// the line of the entry that caused it (a list spans many lines, and the
// key's own line would point at none of them). fields names an entry's
// keys for the error of a key that is not a list.
func parseList[T any](key, fields string, n *yaml.Node, parse func(i int, n *yaml.Node) (T, error), check func([]T) error) ([]T, error) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("line %d: %s: expected a list of entries with %s, got %s", n.Line, key, fields, describe(n))
	}
	list := make([]T, 0, len(n.Content))
	for i, item := range n.Content {
		v, err := parse(i, item)
		if err != nil {
			return nil, err
		}
		list = append(list, v)
		if err := check(list); err != nil {
			return nil, fmt.Errorf("line %d: %w", item.Line, err)
		}
	}
	return list, nil
}
