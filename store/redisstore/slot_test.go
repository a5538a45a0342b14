package redisstore

import "testing"

// Slots as Redis computes them (CLUSTER KEYSLOT), including the hash-tag rule.
func TestSlot(t *testing.T) {
	for key, want := range map[string]uint16{
		"foo":                  12182,
		"bar":                  5061,
		"{user1000}.following": 3443,
		"{user1000}.followers": 3443,
		"foo{}{bar}":           8363, // an empty tag: the whole key
		"123456789":            12739,
	} {
		if got := slot(key); got != want {
			t.Errorf("slot(%q) = %d, want %d", key, got, want)
		}
	}
}
