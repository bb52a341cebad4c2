package main

import (
	"context"
	"errors"
	"io"
)

func tailCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("tail: not built yet")
}
