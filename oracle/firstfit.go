package main

import "errors"

func cmdFirstFit(args []string) error { return errors.New("first-fit: not yet") }
