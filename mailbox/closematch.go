package mailbox

import (
	"sort"
	"strings"
)

// CloseMatches returns up to n of known that name is close to (a typo of
// one, or sharing its name or its domain), closest first: what a refusal
// of an unknown agent offers instead.
func CloseMatches(name string, known []string, n int) []string {
	type scored struct {
		id   string
		dist int
	}
	local, domain, _ := strings.Cut(name, "@")
	var out []scored
	for _, k := range known {
		if k == name {
			continue
		}
		d := editDistance(name, k)
		kl, kd, _ := strings.Cut(k, "@")
		switch {
		case d <= max(2, len(name)/4):
		case kl == local, domain != "" && kd == domain && commonPrefix(kl, local) >= min(4, len(local)):
			d += 3 // the same name elsewhere, or a sibling in the same domain
		default:
			continue
		}
		out = append(out, scored{k, d})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].dist != out[j].dist {
			return out[i].dist < out[j].dist
		}
		return out[i].id < out[j].id
	})
	ids := make([]string, 0, min(n, len(out)))
	for i := 0; i < len(out) && i < n; i++ {
		ids = append(ids, out[i].id)
	}
	return ids
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// editDistance is the Levenshtein distance between a and b, by byte
// (agent ids are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
