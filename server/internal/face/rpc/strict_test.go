package rpc_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/ringcast/ringcast/clients/go/ringcast"
	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/server/internal/testkit/ringtest"
)

// envelope frames one message as Connect streaming and gRPC-Web do.
func envelope(msg string) []byte {
	b := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

// TestUnknownJSONFieldsAndEnumNamesAreInvalidArgument: a JSON request with
// a misspelt field or an unknown enum name fails with invalid_argument
// naming it — on Connect JSON (unary and streaming) and gRPC-Web JSON —
// instead of silently dropping the field; nothing is appended.
func TestUnknownJSONFieldsAndEnumNamesAreInvalidArgument(t *testing.T) {
	ringtest.ForEachStore(t, func(t *testing.T, store ringtest.Store) {
		srv := store.Start(t, ringtest.Config())
		_, before := srv.Hub().Bounds()
		base := srv.URL + "/ringcast.v1.EventService/"
		cases := []struct {
			name, path, ctype string
			body              []byte
			want              string
		}{
			{"connect json unary, misspelt key", "Publish", "application/json",
				[]byte(`{"facts":[{"topic":"a","type":"t","data":{}}],"idempotency_Key":"k"}`), "idempotency_Key"},
			{"connect json stream, misspelt field", "SubscribeEvents", "application/connect+json",
				envelope(`{"endAtHaed":true}`), "endAtHaed"},
			{"connect json stream, unknown enum name", "SubscribeEvents", "application/connect+json",
				envelope(`{"snapshot":"FOO"}`), "FOO"},
			{"grpc-web json, unknown enum name", "SubscribeEvents", "application/grpc-web+json",
				envelope(`{"snapshot":"FOO","endAtHead":true}`), "FOO"},
			{"grpc-web json, misspelt field", "Publish", "application/grpc-web+json",
				envelope(`{"facts":[{"topic":"a","type":"t","data":{}}],"idempotencyKeys":"k"}`), "idempotencyKeys"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				req, _ := http.NewRequest(http.MethodPost, base+c.path, bytes.NewReader(c.body))
				req.Header.Set("Content-Type", c.ctype)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				all := string(body) + " " + resp.Header.Get("Grpc-Status") + " " + resp.Header.Get("Grpc-Message")
				for k, v := range resp.Trailer {
					all += " " + k + ": " + strings.Join(v, ",")
				}
				invalid := strings.Contains(all, "invalid_argument") || resp.Header.Get("Grpc-Status") == "3" || strings.Contains(string(body), "grpc-status:3")
				if !invalid || !strings.Contains(all, c.want) {
					t.Fatalf("status %d, got %q; want invalid_argument naming %s", resp.StatusCode, all, c.want)
				}
			})
		}
		if _, head := srv.Hub().Bounds(); head != before {
			t.Fatalf("refused requests appended: head %d -> %d", before, head)
		}
	})
}

// TestBinaryRequestsIgnoreUnknownFields: binary protobuf keeps ignoring
// fields it does not know, so an older server accepts a newer client's
// requests.
func TestBinaryRequestsIgnoreUnknownFields(t *testing.T) {
	ringtest.ForEachStore(t, func(t *testing.T, store ringtest.Store) {
		srv := store.Start(t, ringtest.Config())
		forEachProtocol(t, func(t *testing.T, p ringcast.Protocol) {
			b, _ := proto.Marshal(&ringcastv1.PublishRequest{Facts: []*ringcastv1.Fact{fact("a/b", "", 1)}})
			b = protowire.AppendTag(b, 999, protowire.BytesType)
			b = protowire.AppendBytes(b, []byte("from the future"))
			var req ringcastv1.PublishRequest
			if err := proto.Unmarshal(b, &req); err != nil {
				t.Fatal(err)
			}
			if _, err := srv.Client(p).Publish(context.Background(), connect.NewRequest(&req)); err != nil {
				t.Fatalf("binary request with an unknown field: %v", err)
			}
		})
	})
}
