package overhead

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Caddy runs Caddy's reverse_proxy (flushing at once, as rcm does) in front
// of upstream (host:port) when a caddy binary is on PATH, with its admin API
// off and no automatic HTTPS. It returns its API root and a stop function,
// or an error wrapping exec.ErrNotFound when Caddy is not installed.
func Caddy(ctx context.Context, upstream string) (base string, stop func(), err error) {
	bin, err := exec.LookPath("caddy")
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	dir, err := os.MkdirTemp("", "rcm-caddy-")
	if err != nil {
		return "", nil, err
	}
	conf := fmt.Sprintf(`{"admin":{"disabled":true},"logging":{"logs":{"default":{"level":"ERROR"}}},
"apps":{"http":{"servers":{"bench":{"listen":[%q],"automatic_https":{"disable":true},
"routes":[{"handle":[{"handler":"reverse_proxy","flush_interval":-1,"upstreams":[{"dial":%q}]}]}]}}}}}`, addr, upstream)
	path := filepath.Join(dir, "caddy.json")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	cmd := exec.CommandContext(ctx, bin, "run", "--config", path)
	cmd.Env = append(cmd.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	stop = func() { cmd.Process.Kill(); cmd.Wait(); os.RemoveAll(dir) }
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "http://" + addr + "/v1", stop, nil
		}
	}
	stop()
	return "", nil, fmt.Errorf("overhead: caddy did not listen on %s in 10 s: %s", addr, out.String())
}
