package hub

import (
	"crypto/sha256"
	"errors"
	"strconv"

	"google.golang.org/protobuf/proto"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// Idempotency keys belong to their publisher (docs/protocol.md, "Publish"):
// a key is the pair (publisher, key), where the publisher is the key space
// the Admitter names for the caller (Admitter.Publisher; the edge's: the
// verified token's issuer and subject, "" without auth, one shared space). Two publishers
// using the same key publish two commits, and neither can read the
// other's receipt or outcome. This file owns the pair's one identity, on
// every store, and the digest of the request a key was first used with.

// A Key is an idempotency key in its publisher's key space.
type Key struct {
	// Publisher is the key space: the caller's (Admitter.Publisher).
	Publisher string
	// Name is the idempotency key the client sent.
	Name string
}

// ID is k as one string: the publisher's length, a colon, the publisher
// and the key, so no two pairs give the same ID (a publisher cannot end
// where another's key begins). Every store keys its table by it (the
// memory store as it is, a durable one by a hash of it).
func (k Key) ID() string {
	return strconv.Itoa(len(k.Publisher)) + ":" + k.Publisher + k.Name
}

// Key is c's idempotency key in its publisher's space (Name "" when c has
// none).
func (c Commit) Key() Key { return Key{Publisher: c.Publisher, Name: c.IdempotencyKey} }

// A Digest names the request a key was first used with: a retry with the
// same facts has the same digest, a reuse of the key with other facts
// (other topics, types, keys, data, or another order) another. It is the
// first 16 bytes of the SHA-256 of the facts' deterministic protobuf
// encoding, each with its index set, so it is the same on every replica
// and across restarts.
type Digest [16]byte

// Digest is the digest of c's facts. Call it after the facts are indexed.
func (c Commit) Digest() Digest {
	return digestFacts(c.Facts)
}

func digestFacts(facts []*ringcastv1.Fact) Digest {
	h := sha256.New()
	var buf []byte
	opts := proto.MarshalOptions{Deterministic: true}
	for i, f := range facts {
		var err error
		buf, err = opts.MarshalAppend(buf[:0], f)
		if err != nil {
			// A fact that cannot be encoded was refused before (checkFacts);
			// keep the digest well defined anyway.
			buf = append(buf[:0], "unencodable"...)
		}
		var n [20]byte
		_, _ = h.Write(strconv.AppendInt(n[:0], int64(i), 10))
		_, _ = h.Write([]byte{':'})
		_, _ = h.Write(strconv.AppendInt(n[:0], int64(len(buf)), 10))
		_, _ = h.Write([]byte{':'})
		_, _ = h.Write(buf)
	}
	var d Digest
	copy(d[:], h.Sum(nil))
	return d
}

// ErrKeyReused refuses a publish whose idempotency key its publisher
// already used, within the dedupe window, for another commit (other
// facts): a permanent error, like a payment API's reused key. An
// identical retry gets the original receipt instead. It names neither the
// earlier commit nor its seq.
var ErrKeyReused = errors.New("this idempotency key was already used, within the dedupe window, for a commit with other facts; a retry must send the same facts, a new commit needs a new key")
