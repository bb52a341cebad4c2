module github.com/ringcast/ringcast/gen/go

go 1.23.0

require (
	buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go v1.36.12-20260825204119-511051f7f437.2
	connectrpc.com/connect v1.18.1
	google.golang.org/protobuf v1.36.12
)
