package edge

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"connectrpc.com/connect"
)

// withTimeoutCheck answers a Connect request whose Connect-Timeout-Ms
// header is not a timeout with invalid_argument naming the header and what
// it takes, in the request's protocol, before connect-go (whose own answer
// quotes its number parser) sees it. Every other request is passed on.
func withTimeoutCheck(next http.Handler) http.Handler {
	ew := connect.NewErrorWriter()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v, ok := r.Header["Connect-Timeout-Ms"]; ok && !validTimeoutMs(v) && ew.IsSupported(r) {
			_ = ew.Write(w, r, connect.NewError(connect.CodeInvalidArgument,
				fmt.Errorf("Connect-Timeout-Ms must be a whole number of milliseconds of at most 10 digits, not %q", strings.Join(v, ","))))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// validTimeoutMs reports whether a Connect-Timeout-Ms header is one value
// of 1 to 10 ASCII digits.
func validTimeoutMs(v []string) bool {
	if len(v) != 1 || len(v[0]) < 1 || len(v[0]) > 10 {
		return false
	}
	for _, c := range []byte(v[0]) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// readFault describes why a request message could not be read, for the
// client: connect-go's error without its code (the answer has its own),
// without "protocol error" and the I/O error's name.
func readFault(err error) string {
	msg := err.Error()
	var ce *connect.Error
	if errors.As(err, &ce) {
		msg = ce.Message()
	}
	msg = strings.TrimPrefix(msg, "protocol error: ")
	msg = strings.TrimSuffix(msg, ": unexpected EOF")
	return "the request message could not be read: " + msg
}
