package app

import "net/http"

// newConsoleHandler serves the web console at /.
func newConsoleHandler() http.Handler { return http.NotFoundHandler() }
