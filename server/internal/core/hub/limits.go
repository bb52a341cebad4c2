package hub

import (
	"fmt"

	validatepb "buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

// The request limits that ServerStatus advertises, and the most commits of
// one PublishBatch, are read from the proto's validation rules, which the
// RPC edge enforces (protovalidate): each rule has one owner,
// api/ringcast/v1/ringcast.proto.
var (
	maxFactsPerCommit = repeatedMaxItems((&ringcastv1.PublishRequest{}).ProtoReflect().Descriptor(), "facts")
	maxTopics         = repeatedMaxItems((&ringcastv1.SubscribeEventsRequest{}).ProtoReflect().Descriptor(), "topics")
	// MaxCommitsPerBatch is the most commits of one PublishBatch request
	// (PublishBatchRequest.commits' repeated.max_items): the embedded
	// store's atomic batch and the CLI's --batch are sized by it.
	MaxCommitsPerBatch = int(repeatedMaxItems((&ringcastv1.PublishBatchRequest{}).ProtoReflect().Descriptor(), "commits"))
)

// repeatedMaxItems returns the repeated.max_items rule of msg's field name.
// It panics (at start-up) when the rule is missing: the proto and this
// package disagree, which only a code change can cause.
func repeatedMaxItems(msg protoreflect.MessageDescriptor, name protoreflect.Name) uint32 {
	fd := msg.Fields().ByName(name)
	if fd == nil {
		panic(fmt.Sprintf("hub: %s has no field %s", msg.FullName(), name))
	}
	rules, _ := proto.GetExtension(fd.Options(), validatepb.E_Field).(*validatepb.FieldRules)
	n := rules.GetRepeated().GetMaxItems()
	if n == 0 || n > 1<<32-1 {
		panic(fmt.Sprintf("hub: %s.%s has no usable repeated.max_items rule", msg.FullName(), name))
	}
	return uint32(n)
}

// jsonInflation bounds how many times larger a fact's protobuf encoding
// may be than the Connect JSON that carried it: a number of one digit and
// its comma (2 bytes of JSON) is a Value of 11 bytes in a ListValue.
const jsonInflation = 6

// commitFraming bounds the bytes a stored commit adds to its facts: each
// fact's tag and length, the event time, the fact count and the message's
// own framing.
const commitFraming = 64

// MaxCommitBytes is the largest stored commit (a SubscribeEventsResponse
// with the commit, as a durable Log stores it) the request limits allow:
// maxFactsPerCommit facts of at most maxFactBytes each, and no more than a
// request of maxRequestBytes decodes to (JSON may carry up to
// jsonInflation times fewer bytes than the protobuf it decodes to).
func MaxCommitBytes(maxRequestBytes, maxFactBytes int) int {
	perFact := maxFactBytes + 1 + binaryVarintLen // the fact, its tag and its length
	byFacts := int(maxFactsPerCommit) * perFact
	byRequest := jsonInflation * maxRequestBytes
	return min(byFacts, byRequest) + commitFraming
}

// binaryVarintLen is the most bytes a length below 1 GiB takes as a varint.
const binaryVarintLen = 5
