//go:build !dra138

package main

import "errors"

func cmdCelSymbols() error {
	return errors.New("cel-symbols: only the 1.38 build (make oracle ORACLE_DRA_VERSION=v0.38) has cel-go's catalog")
}
