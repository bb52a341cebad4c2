package main

import (
	"flag"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/ringcast/ringcast/clients/go/ringcast"
)

// clientFlags are the flags every client command takes.
type clientFlags struct {
	server   string
	token    string
	protocol string
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.server, "server", "http://127.0.0.1:8080", "ringcast server URL")
	fs.StringVar(&c.token, "token", "", "bearer token, when the server requires auth")
	fs.StringVar(&c.protocol, "protocol", "connect", "wire protocol: connect, grpc or grpcweb")
}

func (c *clientFlags) client() (*ringcast.Client, error) {
	p, err := ringcast.ParseProtocol(c.protocol)
	if err != nil {
		return nil, err
	}
	opts := []ringcast.Option{ringcast.WithProtocol(p)}
	if c.token != "" {
		opts = append(opts, ringcast.WithToken(c.token))
	}
	return ringcast.NewClient(c.server, opts...), nil
}

// marshalJSON renders a message as Connect JSON on one line.
func marshalJSON(m proto.Message) ([]byte, error) {
	return protojson.MarshalOptions{}.Marshal(m)
}
