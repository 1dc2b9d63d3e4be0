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
