package main

import (
	"context"
	"fmt"
	"io"
)

const statusSynopsis = `status [flags]

Prints GetServerStatus's response as JSON on one line, as ringcast publish
prints a receipt: every field present, 64-bit integers (headSeq, oldestSeq,
ringBytes, …) as JSON numbers, and the epoch both ways: instanceEpoch as
Connect JSON writes it (a decimal string) and epoch as logs, metrics labels
and SSE ids do (16 lower-case hex digits).`

func statusCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cf clientFlags
	fs := newFlagSet("status", statusSynopsis, stderr)
	cf.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArguments(fs); err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	st, err := firstRequest(ctx, &cf, stderr, "status", c.Status)
	if err != nil {
		return err
	}
	b, err := marshalJSON(st)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	return err
}
