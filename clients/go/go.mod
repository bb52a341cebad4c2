module github.com/ringcast/ringcast/clients/go

go 1.24.0

require (
	connectrpc.com/connect v1.19.1
	github.com/ringcast/ringcast/gen/go v0.0.0
	go.uber.org/goleak v1.3.0
	google.golang.org/protobuf v1.36.12
)

require buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go v1.36.12-20260825204119-511051f7f437.2 // indirect

replace github.com/ringcast/ringcast/gen/go => ../../gen/go
