package main

import (
	"os"
	"runtime/pprof"
)

func init() {
	if p := os.Getenv("TMP_CPUPROF"); p != "" {
		f, _ := os.Create(p)
		pprof.StartCPUProfile(f)
		go func() {
			<-profStop
			pprof.StopCPUProfile()
			f.Close()
			profDone <- true
		}()
	}
}

var profStop = make(chan bool)
var profDone = make(chan bool)
