package npm

import "testing"

func TestUnreachable(t *testing.T) {
	for out, want := range map[string]bool{
		"npm error code ENOTFOUND\nnpm error network request to https://registry failed": true,
		"npm error code EAI_AGAIN": true,
		"npm error code E404\nnpm error 404 Not Found - GET https://registry/opencode-ai": false,
		"": false,
	} {
		if got := Unreachable(out); got != want {
			t.Errorf("Unreachable(%q) = %v, want %v", out, got, want)
		}
	}
}
