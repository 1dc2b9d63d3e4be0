package mailbox

// indexedHeap is a binary min-heap whose elements know their own position, so
// any element can be removed in O(log n). The queues use it to lease the oldest
// task of one recipient while also removing it from the global order.
type indexedHeap[T any] struct {
	items []T
	less  func(a, b T) bool
	index func(T) *int
}

func newIndexedHeap[T any](less func(a, b T) bool, index func(T) *int) *indexedHeap[T] {
	return &indexedHeap[T]{less: less, index: index}
}

func (h *indexedHeap[T]) Len() int { return len(h.items) }

func (h *indexedHeap[T]) Peek() (T, bool) {
	var zero T
	if len(h.items) == 0 {
		return zero, false
	}
	return h.items[0], true
}

func (h *indexedHeap[T]) Push(x T) {
	h.items = append(h.items, x)
	*h.index(x) = len(h.items) - 1
	h.up(len(h.items) - 1)
}

// Remove takes x out of the heap; it is a no-op when x is not in it.
func (h *indexedHeap[T]) Remove(x T) {
	i := *h.index(x)
	if i < 0 || i >= len(h.items) {
		return
	}
	last := len(h.items) - 1
	if i != last {
		h.swap(i, last)
	}
	var zero T
	h.items[last] = zero
	h.items = h.items[:last]
	*h.index(x) = -1
	if i != last {
		if !h.down(i) {
			h.up(i)
		}
	}
}

func (h *indexedHeap[T]) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	*h.index(h.items[i]) = i
	*h.index(h.items[j]) = j
}

func (h *indexedHeap[T]) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(h.items[j], h.items[i]) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h *indexedHeap[T]) down(i0 int) bool {
	i, n := i0, len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && h.less(h.items[r], h.items[l]) {
			j = r
		}
		if !h.less(h.items[j], h.items[i]) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}

// Ascend calls yield with the heap's items smallest first, until yield
// returns false or the items run out. It walks the heap from its root
// with a small heap of its own (the frontier: the children of the items
// yielded so far), so the first k items cost O(k log k) whatever the
// heap's size. The heap must not change during the walk.
func (h *indexedHeap[T]) Ascend(yield func(T) bool) {
	if len(h.items) == 0 {
		return
	}
	frontier := []int{0}
	less := func(a, b int) bool { return h.less(h.items[frontier[a]], h.items[frontier[b]]) }
	for len(frontier) > 0 {
		top := frontier[0]
		// Pop the frontier's smallest.
		last := len(frontier) - 1
		frontier[0] = frontier[last]
		frontier = frontier[:last]
		for i := 0; ; {
			l, m := 2*i+1, i
			if l < len(frontier) && less(l, m) {
				m = l
			}
			if r := l + 1; r < len(frontier) && less(r, m) {
				m = r
			}
			if m == i {
				break
			}
			frontier[i], frontier[m] = frontier[m], frontier[i]
			i = m
		}
		if !yield(h.items[top]) {
			return
		}
		// Its children are next in line.
		for _, c := range [2]int{2*top + 1, 2*top + 2} {
			if c >= len(h.items) {
				continue
			}
			frontier = append(frontier, c)
			for j := len(frontier) - 1; j > 0; {
				p := (j - 1) / 2
				if !less(j, p) {
					break
				}
				frontier[j], frontier[p] = frontier[p], frontier[j]
				j = p
			}
		}
	}
}
