package rpc_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
	"github.com/ringcast/ringcast/gen/go/ringcast/v1/ringcastv1connect"
)

// BenchmarkPublishConnect measures the server's cost of one Connect unary
// Publish (a one-fact commit, 100-byte binary payload, or the small struct
// payload of the other benchmarks, in binary; or, as the load tool sends
// it, a Connect JSON request with a small JSON object and 100 bytes of
// padding) over a real HTTP/1.1 keep-alive
// connection on loopback, through the production assembly. The client is a
// raw connection that writes a prepared request and reads the response
// without decoding it, so allocs/op and B/op are almost all the server's
// (the client's share is measured by the "client-only" case, which sends
// the same request to a listener that answers with a fixed response).
func BenchmarkPublishConnect(b *testing.B) {
	payloads := map[string]*ringcastv1.PublishRequest{
		"binary-100B": {Facts: []*ringcastv1.Fact{{
			Topic: "gauges/ribble/g-014", Type: "gauge.level", Key: "g-014",
			Payload: &ringcastv1.Fact_BinaryData{BinaryData: bytes.Repeat([]byte{'x'}, 100)},
		}}},
		"struct": {Facts: benchRPCFacts()},
	}
	for _, name := range []string{"binary-100B", "struct"} {
		body, err := proto.Marshal(payloads[name])
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			s := benchServer(b)
			runRawPublishes(b, s.Addr, "application/proto", body)
		})
	}
	b.Run("json", func(b *testing.B) {
		body := []byte(`{"facts":[{"topic":"bench/t","type":"bench","data":{"seq":1,"ts":123,"pad":"` +
			strings.Repeat("x", 100) + `"}}]}`)
		s := benchServer(b)
		runRawPublishes(b, s.Addr, "application/json", body)
	})
	b.Run("client-only", func(b *testing.B) {
		body, _ := proto.Marshal(payloads["binary-100B"])
		ln := fixedResponder(b)
		runRawPublishes(b, ln, "application/proto", body)
	})
}

// runRawPublishes sends b.N Connect unary Publish requests with the given
// content type on one connection to addr and reads each response.
func runRawPublishes(b *testing.B, addr, contentType string, body []byte) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	req := fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nConnect-Protocol-Version: 1\r\nContent-Length: %d\r\n\r\n",
		ringcastv1connect.EventServicePublishProcedure, addr, contentType, len(body))
	req = append(req, body...)
	r := bufio.NewReaderSize(conn, 4096)
	cpu0, ok0 := processCPU()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := conn.Write(req); err != nil {
			b.Fatal(err)
		}
		if err := readRawResponse(r); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if cpu1, ok1 := processCPU(); ok0 && ok1 {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
}

// readRawResponse reads one HTTP/1.1 response with a 200 status and a
// Content-Length or chunked body, and discards the body.
func readRawResponse(r *bufio.Reader) error {
	status, err := r.ReadSlice('\n')
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(status, []byte("HTTP/1.1 200 ")) {
		return fmt.Errorf("response: %q", status)
	}
	length, chunked := -1, false
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) <= 2 {
			break
		}
		name, value, _ := bytes.Cut(bytes.TrimSpace(line), []byte(":"))
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			n, err := strconv.Atoi(string(value))
			if err != nil {
				return err
			}
			length = n
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		}
	}
	if !chunked {
		if length < 0 {
			return fmt.Errorf("response without a length")
		}
		_, err := r.Discard(length)
		return err
	}
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
		if err != nil {
			return err
		}
		if _, err := r.Discard(int(n) + 2); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
	}
}

// fixedResponder is a listener that answers every request on a connection
// with the same small Content-Length response, reading requests without
// parsing more than their length: the client's own cost, for comparison.
func fixedResponder(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	res := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/proto\r\nContent-Length: 24\r\n\r\n" + string(make([]byte, 24)))
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					length := 0
					for {
						line, err := r.ReadSlice('\n')
						if err != nil {
							return
						}
						if len(line) <= 2 {
							break
						}
						if name, value, ok := bytes.Cut(bytes.TrimSpace(line), []byte(":")); ok && bytes.EqualFold(name, []byte("Content-Length")) {
							length, _ = strconv.Atoi(string(bytes.TrimSpace(value)))
						}
					}
					if _, err := r.Discard(length); err != nil {
						return
					}
					if _, err := c.Write(res); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}
