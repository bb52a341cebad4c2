package main

import (
	"context"
	"fmt"
	"io"
)

func statusCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cf clientFlags
	fs := newFlagSet("status", "status [flags]", stderr)
	cf.register(fs)
	if err := parseFlags(fs, args); err != nil {
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
