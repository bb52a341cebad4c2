package main

import (
	"context"
	"fmt"
	"io"

	"connectrpc.com/connect"

	ringcastv1 "github.com/ringcast/ringcast/gen/go/ringcast/v1"
)

const outcomeSynopsis = `outcome [flags] KEY

Reads, without writing, what became of the publish sent with idempotency key
KEY (GetPublishOutcome) and prints the response as JSON on one line:
  {"applied":true,"receipt":{"seq":12,"instanceEpoch":"…","epoch":"…","eventTime":"…","duplicate":false},"rememberedSince":"…"}
  {"applied":false,"rememberedSince":"…"}
applied (with the original receipt) when a commit with the key was
appended; otherwise no commit with the key was appended at or after
rememberedSince (keys are remembered for the server's dedupe window). Exits
0 with either answer, and non-zero when the call fails. The response is the
server's Connect JSON with every field present ("applied":false is
written, where Connect JSON leaves it out), seq as a JSON number and the
epoch both ways, as ringcast publish prints a receipt. A KEY that starts
with "-" follows "--": ringcast outcome -- -k1.`

func outcomeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cf clientFlags
	fs := newFlagSet("outcome", outcomeSynopsis, stderr)
	cf.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 || fs.Arg(0) == "" {
		fmt.Fprintf(stderr, "ringcast outcome: want exactly one non-empty idempotency KEY, got %q\n", fs.Args())
		return errUsage
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	// The generated call, not Client.Outcome: the response is printed as
	// the server sent it.
	req := connect.NewRequest(&ringcastv1.GetPublishOutcomeRequest{IdempotencyKey: fs.Arg(0)})
	res, err := firstRequest(ctx, &cf, stderr, "outcome", func(ctx context.Context) (*connect.Response[ringcastv1.GetPublishOutcomeResponse], error) {
		return c.RPC().GetPublishOutcome(ctx, req)
	})
	if err != nil {
		return err
	}
	b, err := marshalJSON(res.Msg)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	return err
}
