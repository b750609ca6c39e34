// Package fewmap is a map from int64 keys for the few keys one account has (its copy
// links, usually one): the first entry is held inline in its owner, the rest in a short
// list searched in order. On the fan-out path an account's state is touched cold, once per
// event; a Go map's lookup there touched the map's header and then its group, two cache
// misses beside the owner's, where the inline entry costs none.
package fewmap

import "iter"

type entry[V any] struct {
	key int64
	val V
}

// Map is the map; its zero value is empty and ready to use. It is not safe for concurrent
// use. Iteration order is not the keys' order.
type Map[V any] struct {
	n     int // entries: first is set when n > 0, rest holds n − 1
	first entry[V]
	rest  []entry[V]
}

// Len is the number of keys.
func (m *Map[V]) Len() int { return m.n }

// find returns the entry of key, or nil.
func (m *Map[V]) find(key int64) *entry[V] {
	if m.n == 0 {
		return nil
	}
	if m.first.key == key {
		return &m.first
	}
	for i := range m.rest {
		if m.rest[i].key == key {
			return &m.rest[i]
		}
	}
	return nil
}

// Get returns key's value and whether key is present.
func (m *Map[V]) Get(key int64) (V, bool) {
	if e := m.find(key); e != nil {
		return e.val, true
	}
	var zero V
	return zero, false
}

// Set makes v key's value.
func (m *Map[V]) Set(key int64, v V) {
	if e := m.find(key); e != nil {
		e.val = v
		return
	}
	if m.n == 0 {
		m.first = entry[V]{key, v}
	} else {
		m.rest = append(m.rest, entry[V]{key, v})
	}
	m.n++
}

// Delete removes key (nothing when absent).
func (m *Map[V]) Delete(key int64) {
	e := m.find(key)
	if e == nil {
		return
	}
	last := len(m.rest) - 1
	if last < 0 { // key was the only entry
		m.first = entry[V]{}
		m.n = 0
		return
	}
	*e = m.rest[last] // the last entry takes key's place, inline or in the list
	m.rest[last] = entry[V]{}
	m.rest = m.rest[:last]
	m.n--
}

// DeleteFunc removes every key for which del returns true; del sees each entry once.
func (m *Map[V]) DeleteFunc(del func(key int64, v V) bool) {
	for i := 0; i < len(m.rest); {
		if e := m.rest[i]; del(e.key, e.val) {
			m.Delete(e.key) // the last entry moves to i: look at i again
			continue
		}
		i++
	}
	if m.n > 0 && del(m.first.key, m.first.val) {
		m.Delete(m.first.key)
	}
}

// All yields every key and its value.
func (m *Map[V]) All() iter.Seq2[int64, V] {
	return func(yield func(int64, V) bool) {
		if m.n == 0 || !yield(m.first.key, m.first.val) {
			return
		}
		for _, e := range m.rest {
			if !yield(e.key, e.val) {
				return
			}
		}
	}
}
