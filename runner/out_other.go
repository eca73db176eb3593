//go:build !linux

package runner

import "errors"

// errNoExchange: the file system cannot exchange two names in one step
// (renameat2 is Linux's): the previous logs are moved aside instead.
var errNoExchange = errors.New("the file system cannot exchange two paths atomically")

var exchange = func(a, b string) error { return errNoExchange }
