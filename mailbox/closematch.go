package mailbox

import (
	"sort"
	"strings"

	"github.com/mailroom/mailroom/internal/editdist"
)

// CloseMatches returns up to n of known that name is close to (a typo of
// one, or sharing its name or its domain; a bare name is matched against
// the names before the @, typos too), closest first: what a refusal of an
// unknown agent offers instead.
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
		d := editdist.Distance(name, k)
		kl, kd, _ := strings.Cut(k, "@")
		switch {
		case d <= max(2, len(name)/4):
		case kl == local, domain != "" && kd == domain && commonPrefix(kl, local) >= min(4, len(local)):
			d += 3 // the same name elsewhere, or a sibling in the same domain
		case domain == "" && kd != "" && editdist.Distance(local, kl) <= max(2, len(local)/4):
			// A bare name, mistyped: reveiwer is close to reviewer@local.
			d = editdist.Distance(local, kl) + 3
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
