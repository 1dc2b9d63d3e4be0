package mailbox

// Idempotent deduplication. A second send of an idempotent task with the
// same (sender, recipient, kind or intent, key) while the first is live
// returns the first task; after the first one's result was posted, the
// duplicate is answered with a copy of that result and never leased.

// Result-cache bounds, by count and by age (measured in event time, so
// replay and every replica evict exactly the same entries).
const (
	DefaultResultCacheMax   = 10000
	DefaultResultCacheAgeMs = int64(24 * 60 * 60 * 1000)
)

// CachedResult is a posted result kept to answer later identical
// idempotent tasks.
type CachedResult struct {
	Key    string `json:"key"`
	TaskID string `json:"task_id"`
	AtMs   int64  `json:"at_ms"`
	Result Result `json:"result"`
}

// dedupeKey is the identity of an idempotent task; "" for unsafe tasks.
func dedupeKey(t *Task) string {
	if !t.Idempotent() {
		return ""
	}
	what := t.IntentText
	if t.TaskKind != nil {
		what = "kind:" + *t.TaskKind
	} else {
		what = "intent:" + what
	}
	return t.Sender + "\x00" + t.Recipient + "\x00" + what + "\x00" + t.Idempotency.Key
}

// LiveDuplicate returns the id of a queued or in-flight task that t
// duplicates, if any.
func (s *State) LiveDuplicate(t Task) (string, bool) {
	k := dedupeKey(&t)
	if k == "" {
		return "", false
	}
	id, ok := s.live[k]
	return id, ok
}

// cachedFor returns the cached result t duplicates, unless it has expired
// by nowMs (eviction itself waits for the next event).
func (s *State) cachedFor(t *Task, nowMs int64) (*CachedResult, bool) {
	k := dedupeKey(t)
	if k == "" {
		return nil, false
	}
	c, ok := s.cache[k]
	if !ok || c.AtMs < nowMs-s.ResultCacheAgeMs {
		return nil, false
	}
	return c, true
}

func (s *State) trackLive(t *taskRec) {
	if k := dedupeKey(&t.Task); k != "" {
		s.live[k] = t.Task.ID
	}
}

func (s *State) untrackLive(t *taskRec) {
	if k := dedupeKey(&t.Task); k != "" && s.live[k] == t.Task.ID {
		delete(s.live, k)
	}
}

func (s *State) cacheResult(t *taskRec, r Result, atMs int64) {
	k := dedupeKey(&t.Task)
	if k == "" {
		return
	}
	c := &CachedResult{Key: k, TaskID: t.Task.ID, AtMs: atMs, Result: r}
	s.cache[k] = c
	s.cacheOrder = append(s.cacheOrder, c)
	s.evictCache(atMs)
}

// evictCache drops cached results past the count bound or older than the
// age bound at nowMs, oldest first. The count is of live entries only (not
// of entries a newer result for the same key replaced), as in a state
// restored from a snapshot, which holds only live ones.
func (s *State) evictCache(nowMs int64) {
	maxN, maxAge := s.ResultCacheMax, s.ResultCacheAgeMs
	for s.cacheHead < len(s.cacheOrder) {
		c := s.cacheOrder[s.cacheHead]
		if s.cache[c.Key] == c && len(s.cache) <= maxN && c.AtMs >= nowMs-maxAge {
			break
		}
		s.cacheOrder[s.cacheHead] = nil
		s.cacheHead++
		if s.cache[c.Key] == c {
			delete(s.cache, c.Key)
		}
	}
	if s.cacheHead > 1024 && s.cacheHead*2 > len(s.cacheOrder) {
		s.cacheOrder = append([]*CachedResult(nil), s.cacheOrder[s.cacheHead:]...)
		s.cacheHead = 0
	}
}

// CachedResults returns the live cache entries, oldest first.
func (s *State) CachedResults() []CachedResult {
	var out []CachedResult
	for _, c := range s.cacheOrder[s.cacheHead:] {
		if s.cache[c.Key] == c {
			out = append(out, *c)
		}
	}
	return out
}
