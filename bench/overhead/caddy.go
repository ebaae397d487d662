package overhead

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	addr, err := FreeAddr()
	if err != nil {
		return "", nil, err
	}
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
	cmd := exec.Command(bin, "run", "--config", path)
	cmd.Env = append(cmd.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	stopCaddy, err := Start(ctx, cmd, addr)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return "http://" + addr + "/v1", func() { stopCaddy(); os.RemoveAll(dir) }, nil
}
