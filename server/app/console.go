package app

import (
	"net/http"

	"github.com/ringcast/ringcast/server/console"
)

// newConsoleHandler serves the web console at /.
func newConsoleHandler() http.Handler { return console.Handler() }
