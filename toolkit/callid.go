package toolkit

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"unicode"
	"unicode/utf8"
)

// A call's id: checked when its batch is set up (at most MaxCallIDLen
// bytes of UTF-8 without control characters, and not one an earlier call
// of the batch uses), made when the model gave none.

// MaxCallIDLen is the longest call id accepted, in bytes.
const MaxCallIDLen = 256

func validateCallID(id string) error {
	bad := func(why string) error {
		return &callError{kind: ErrInvalidCall, msg: fmt.Sprintf("invalid call id %q: %s", truncate(id, 80), why)}
	}
	if len(id) > MaxCallIDLen {
		return bad(fmt.Sprintf("%d bytes long, at most %d allowed", len(id), MaxCallIDLen))
	}
	if !utf8.ValidString(id) {
		return bad("not valid UTF-8")
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return bad("contains control characters")
		}
	}
	return nil
}

// idScan is the largest batch whose ids are checked by a scan.
const idScan = 16

// duplicateID reports whether call i reuses the id of an earlier call.
// Batches are usually small: up to idScan calls a scan is cheapest, above
// that the ids go into a set.
func duplicateID(set *idSet, calls []call, i int) bool {
	if set == nil {
		id := calls[i].call.ID
		for j := range i {
			if calls[j].call.ID == id {
				return true
			}
		}
		return false
	}
	return set.add(calls, i)
}

// idSet finds calls that reuse an id in batches above idScan calls: up to
// 256 an open-addressing table, beyond that a map.
type idSet struct {
	slots [512]uint16 // call index + 1, by hash of its id; 0 is empty
	big   map[string]struct{}
}

var idSeed = maphash.MakeSeed()

// add reports whether call i reuses the id of an earlier call of calls.
func (s *idSet) add(calls []call, i int) bool {
	id := calls[i].call.ID
	switch n := len(calls); {
	case n <= 256:
		for h := maphash.String(idSeed, id); ; h++ {
			k := &s.slots[h%uint64(len(s.slots))]
			if *k == 0 {
				*k = uint16(i + 1)
				return false
			}
			if calls[*k-1].call.ID == id {
				return true
			}
		}
	default:
		if s.big == nil {
			s.big = make(map[string]struct{}, n)
		}
		_, dup := s.big[id]
		s.big[id] = struct{}{}
		return dup
	}
}

func newCallID() string { return "call_" + randomHex(8) }

// randomHex returns 2n random hex digits. The ids it makes must not repeat,
// not resist guessing, so math/rand/v2's generator (seeded by the runtime
// from the operating system) does; crypto/rand would add a quarter of a
// megabyte to every program that embeds the toolkit.
func randomHex(n int) string {
	b := make([]byte, (n+7)/8*8)
	for i := 0; i < len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], rand.Uint64())
	}
	return hex.EncodeToString(b[:n])
}
