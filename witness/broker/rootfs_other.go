//go:build !unix

package broker

const openNonblock = 0
