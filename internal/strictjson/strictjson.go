// Package strictjson refuses the JSON that encoding/json lets through but
// that does not mean what it says:
//
//   - a key given twice in one object (encoding/json keeps the last one, so
//     {"lease_id":"<wrong>","lease_id":"<current>"} passes a lease guard);
//   - a key in another letter case (encoding/json takes "Sender" as sender,
//     although unknown fields are refused);
//   - an empty string where a field is optional and "" would silently mean
//     "absent" (a repair's lease_id: "" would mean "no guard");
//   - a free-form value nested so deep that a stored copy, a few levels
//     deeper inside the log, a snapshot or an event, no longer decodes.
//
// It walks the raw bytes once, guided by the Go type the body decodes into,
// and allocates nothing on the common path.
package strictjson

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// EmptyTag is the struct tag that marks an optional string field whose
// explicit empty value is refused; its text says what was expected, for
// example `empty:"expected a UUID; omit the field to let the daemon assign one"`.
const EmptyTag = "empty"

// ZeroTag is the struct tag that marks an optional number field whose
// explicit 0 is refused, where an absent field means a default and 0 is
// out of range; its text says what was expected, for example
// `zero:"expected 1 to 64; omit the field for the default, 4"`.
const ZeroTag = "zero"

// Error is one refusal: Path names the field as a request spells it
// (command.lease_id, content[0].value), Msg what is wrong and what was
// expected.
type Error struct {
	Path string
	Msg  string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return "request body: " + e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Deferred is a value Check walks for its syntax only: no duplicate key,
// depth or field rule applies inside it, because it is checked on its own
// later. A batch's items are: each is refused in its place, as its own
// request would be, rather than refusing the whole batch. It decodes as its
// raw bytes, as json.RawMessage does.
type Deferred []byte

// UnmarshalJSON keeps a copy of data.
func (d *Deferred) UnmarshalJSON(data []byte) error {
	*d = append((*d)[:0], data...)
	return nil
}

var deferredType = reflect.TypeFor[Deferred]()

// errSyntax is returned for bytes that are not JSON: the caller's real
// decoder says where and why.
var errSyntax = &Error{Msg: "invalid JSON"}

// IsSyntax reports whether err means data was not valid JSON.
func IsSyntax(err error) bool { return err == errSyntax }

// hardDepth bounds the walk's recursion whatever the type says; encoding/json
// stops at 10,000, and a typed body never nests near this.
const hardDepth = 512

// Check walks data, which should decode into a value of type t, and refuses
// duplicate keys, keys that match a field only in another letter case, empty
// strings in fields tagged `empty`, and free-form values (json.RawMessage,
// interface and map types) nested more than maxValueDepth arrays and objects
// deep. Keys that name no field at all are left to the decoder's
// DisallowUnknownFields. Data that is not JSON gives an error for which
// IsSyntax is true.
func Check(data []byte, t reflect.Type, maxValueDepth int) error {
	return check(data, t, "", maxValueDepth)
}

// CheckValue checks one free-form value, such as a result's content value,
// found at path.
func CheckValue(data []byte, path string, maxValueDepth int) error {
	return check(data, nil, path, maxValueDepth)
}

func check(data []byte, t reflect.Type, path string, maxValueDepth int) error {
	// The path's backing array outlives no walk (errors copy it into a
	// string), so it is reused: a batch walks a hundred bodies a request.
	bp := pathBufs.Get().(*[]seg)
	c := checker{data: data, maxValue: maxValueDepth, path: (*bp)[:0]}
	defer func() {
		*bp = c.path[:0]
		pathBufs.Put(bp)
	}()
	if path != "" {
		c.path = append(c.path, seg{key: []byte(path)})
	}
	if err := c.value(t, 0, -1); err != nil {
		return err
	}
	c.ws()
	if c.pos != len(data) {
		return errSyntax
	}
	return nil
}

var pathBufs = sync.Pool{New: func() any {
	b := make([]seg, 0, 32)
	return &b
}}

// seg is one step of a path: an object key, or an array index when key is nil.
type seg struct {
	key   []byte
	index int
}

type checker struct {
	data     []byte
	pos      int
	maxValue int
	// path holds the segments to the value being walked (content, 0,
	// value); it is joined only for an error.
	path []seg
	// valueRoot is len(path) where the free-form value being walked began.
	valueRoot int
	// deferred is above 0 inside a Deferred value: syntax only.
	deferred int
}

func (c *checker) ws() {
	for c.pos < len(c.data) {
		switch c.data[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *checker) pathString(n int) string {
	var b strings.Builder
	for i, sg := range c.path[:n] {
		switch {
		case sg.key == nil:
			b.WriteString("[" + strconv.Itoa(sg.index) + "]")
		case i > 0:
			b.WriteByte('.')
			fallthrough
		default:
			b.Write(sg.key)
		}
	}
	return b.String()
}

// value walks one value. t is the Go type it decodes into; nil means
// free-form. valueDepth is how many arrays and objects of a free-form value
// enclose this one, or -1 outside free-form values.
func (c *checker) value(t reflect.Type, depth, valueDepth int) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == deferredType {
		c.deferred++
		err := c.value(nil, depth, -1)
		c.deferred--
		return err
	}
	if t != nil && freeForm(t) {
		t = nil
	}
	if t == nil && valueDepth < 0 {
		valueDepth, c.valueRoot = 0, len(c.path)
	}
	if depth > hardDepth {
		return &Error{Path: c.pathString(len(c.path)), Msg: "nested more than " + strconv.Itoa(hardDepth) + " levels deep"}
	}
	c.ws()
	if c.pos >= len(c.data) {
		return errSyntax
	}
	switch b := c.data[c.pos]; {
	case b == '{' || b == '[':
		if valueDepth >= 0 {
			valueDepth++
			if valueDepth > c.maxValue && c.deferred == 0 {
				return &Error{Path: c.pathString(c.valueRoot),
					Msg: "nested more than " + strconv.Itoa(c.maxValue) + " levels of arrays and objects deep, expected at most " + strconv.Itoa(c.maxValue)}
			}
		}
		if b == '{' {
			return c.object(t, depth, valueDepth)
		}
		return c.array(t, depth, valueDepth)
	case b == '"':
		_, _, err := c.str()
		return err
	default:
		return c.scalar()
	}
}

// freeForm reports whether a value of t may hold any keys: raw JSON,
// interfaces and maps.
func freeForm(t reflect.Type) bool {
	return t == rawMessage || t.Kind() == reflect.Interface || t.Kind() == reflect.Map
}

var rawMessage = reflect.TypeFor[json.RawMessage]()

func (c *checker) array(t reflect.Type, depth, valueDepth int) error {
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	c.pos++ // [
	c.ws()
	if c.pos < len(c.data) && c.data[c.pos] == ']' {
		c.pos++
		return nil
	}
	for i := 0; ; i++ {
		c.path = append(c.path, seg{index: i})
		if err := c.value(elem, depth+1, valueDepth); err != nil {
			return err
		}
		c.path = c.path[:len(c.path)-1]
		if more, err := c.more(']'); !more {
			return err
		}
	}
}

// more consumes what follows a member: a comma (more to come) or the
// closing bracket (done, err nil).
func (c *checker) more(closing byte) (bool, error) {
	c.ws()
	if c.pos >= len(c.data) {
		return false, errSyntax
	}
	switch c.data[c.pos] {
	case ',':
		c.pos++
		return true, nil
	case closing:
		c.pos++
		return false, nil
	}
	return false, errSyntax
}

func (c *checker) object(t reflect.Type, depth, valueDepth int) error {
	var fields *structFields
	if t != nil && t.Kind() == reflect.Struct {
		fields = fieldsOf(t)
	}
	c.pos++ // {
	c.ws()
	if c.pos < len(c.data) && c.data[c.pos] == '}' {
		c.pos++
		return nil
	}
	var seenFields uint64
	var seen keySet
	for {
		c.ws()
		if c.pos >= len(c.data) || c.data[c.pos] != '"' {
			return errSyntax
		}
		raw, escaped, err := c.str()
		if err != nil {
			return err
		}
		key := raw[1 : len(raw)-1]
		if escaped {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				return errSyntax
			}
			key = []byte(s)
		}
		c.ws()
		if c.pos >= len(c.data) || c.data[c.pos] != ':' {
			return errSyntax
		}
		c.pos++
		c.path = append(c.path, seg{key: key})
		var ft reflect.Type
		if fields != nil {
			f, ok := fields.byName[string(key)]
			switch {
			case ok:
				if seenFields&(1<<f.index) != 0 {
					return c.duplicate()
				}
				seenFields |= 1 << f.index
				ft = f.typ
				if f.empty != "" && c.emptyString() {
					return &Error{Path: c.pathString(len(c.path)), Msg: `got "", ` + f.empty}
				}
				if f.zero != "" && c.zeroNumber() {
					return &Error{Path: c.pathString(len(c.path)), Msg: "got 0, " + f.zero}
				}
			default:
				if name, ok := fields.fold(string(key)); ok {
					return &Error{Path: c.pathString(len(c.path)),
						Msg: "unknown field: keys are matched exactly, letter case included; did you mean " + strconv.Quote(name) + "?"}
				}
				// A key that names no field at all is the decoder's to
				// refuse; walk its value as free-form all the same.
				if seen.add(key) {
					return c.duplicate()
				}
			}
		} else if c.deferred == 0 && seen.add(key) {
			return c.duplicate()
		}
		if err := c.value(ft, depth+1, valueDepth); err != nil {
			return err
		}
		c.path = c.path[:len(c.path)-1]
		if more, err := c.more('}'); !more {
			return err
		}
	}
}

func (c *checker) duplicate() error {
	return &Error{Path: c.pathString(len(c.path)), Msg: "given twice in one object; each key may appear once"}
}

// keySet holds the keys of one free-form object: a few in place, a map
// past that.
type keySet struct {
	n     int
	small [16][]byte
	many  map[string]struct{}
}

// add records key and reports whether it was there already.
func (k *keySet) add(key []byte) (dup bool) {
	if k.many != nil {
		if _, dup := k.many[string(key)]; dup {
			return true
		}
		k.many[string(key)] = struct{}{}
		return false
	}
	for _, have := range k.small[:k.n] {
		if string(have) == string(key) {
			return true
		}
	}
	if k.n < len(k.small) {
		k.small[k.n] = key
		k.n++
		return false
	}
	k.many = make(map[string]struct{}, 2*len(k.small))
	for _, have := range k.small {
		k.many[string(have)] = struct{}{}
	}
	k.many[string(key)] = struct{}{}
	return false
}

// emptyString reports whether the value at pos is the string "".
func (c *checker) emptyString() bool {
	c.ws()
	return c.pos+1 < len(c.data) && c.data[c.pos] == '"' && c.data[c.pos+1] == '"'
}

// zeroNumber reports whether the value at pos is a number equal to 0
// (0, -0, 0.0, 0e3).
func (c *checker) zeroNumber() bool {
	c.ws()
	end := c.pos
	for end < len(c.data) && strings.IndexByte("+-0123456789.eE", c.data[end]) >= 0 {
		end++
	}
	if end == c.pos {
		return false
	}
	f, err := strconv.ParseFloat(string(c.data[c.pos:end]), 64)
	return err == nil && f == 0
}

// str consumes a string at pos and returns it with its quotes, and whether
// it holds escapes. An escape of half a UTF-16 surrogate pair is refused:
// encoding/json turns it into U+FFFD, a raw copy keeps it, and jq refuses
// to read it.
func (c *checker) str() (raw []byte, escaped bool, err error) {
	start := c.pos
	c.pos++ // "
	for c.pos < len(c.data) {
		switch c.data[c.pos] {
		case '\\':
			escaped = true
			if c.pos+1 < len(c.data) && c.data[c.pos+1] == 'u' {
				if err := c.surrogate(); err != nil {
					return nil, false, err
				}
			}
			c.pos += 2
		case '"':
			c.pos++
			return c.data[start:c.pos], escaped, nil
		default:
			c.pos++
		}
	}
	return nil, false, errSyntax
}

// surrogate checks the \u escape at pos: a high surrogate must be followed
// at once by a low one, and a low one must follow a high one.
func (c *checker) surrogate() error {
	r, ok := hex4(c.data, c.pos+2)
	if !ok || r < 0xD800 || r > 0xDFFF {
		return nil
	}
	if r <= 0xDBFF && c.pos+11 < len(c.data) && c.data[c.pos+6] == '\\' && c.data[c.pos+7] == 'u' {
		if lo, ok := hex4(c.data, c.pos+8); ok && lo >= 0xDC00 && lo <= 0xDFFF {
			c.pos += 6 // the pair is whole: step over its high half
			return nil
		}
	}
	return &Error{Path: c.pathString(len(c.path)),
		Msg: "contains " + string(c.data[c.pos:c.pos+6]) + ", half of a UTF-16 surrogate pair: it stands for no character and JSON readers such as jq refuse it; expected a whole pair or the character itself"}
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, h := range b[at : at+4] {
		switch {
		case '0' <= h && h <= '9':
			r = r<<4 | rune(h-'0')
		case 'a' <= h && h <= 'f':
			r = r<<4 | rune(h-'a'+10)
		case 'A' <= h && h <= 'F':
			r = r<<4 | rune(h-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// scalar consumes a number, true, false or null.
func (c *checker) scalar() error {
	start := c.pos
	for c.pos < len(c.data) {
		switch c.data[c.pos] {
		case ',', ']', '}', ' ', '\t', '\n', '\r':
			if c.pos == start {
				return errSyntax
			}
			return nil
		case '{', '[', '"', ':':
			return errSyntax
		}
		c.pos++
	}
	if c.pos == start {
		return errSyntax
	}
	return nil
}

type field struct {
	index int
	typ   reflect.Type
	empty string
	zero  string
}

type structFields struct {
	byName map[string]field
	names  []string
}

// fold finds the field whose name equals key but for letter case, the way
// encoding/json would have matched it.
func (s *structFields) fold(key string) (string, bool) {
	for _, n := range s.names {
		if strings.EqualFold(n, key) {
			return n, true
		}
	}
	return "", false
}

var cache sync.Map // reflect.Type -> *structFields

// fieldsOf lists the JSON names of t's fields as encoding/json sees them,
// embedded structs' fields promoted.
func fieldsOf(t reflect.Type) *structFields {
	if f, ok := cache.Load(t); ok {
		return f.(*structFields)
	}
	s := &structFields{byName: map[string]field{}}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if sf.Anonymous && name == "" {
				ft := sf.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft)
					continue
				}
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			if _, dup := s.byName[name]; dup || len(s.names) >= 64 {
				continue
			}
			s.byName[name] = field{index: len(s.names), typ: sf.Type, empty: sf.Tag.Get(EmptyTag), zero: sf.Tag.Get(ZeroTag)}
			s.names = append(s.names, name)
		}
	}
	walk(t)
	f, _ := cache.LoadOrStore(t, s)
	return f.(*structFields)
}
