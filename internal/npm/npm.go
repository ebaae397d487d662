// Package npm holds what the real-client installers (internal/client/...)
// share about npm: telling a registry that cannot be reached (a machine
// without network, where tests may skip) from an install that is broken,
// and one install at a time into a directory, across processes (on unix).
package npm

import "strings"

// networkCodes are the npm error codes of a registry that cannot be reached.
var networkCodes = []string{
	"ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "ECONNRESET",
	"EHOSTUNREACH", "ENETUNREACH", "ERR_SOCKET_TIMEOUT", "network request to",
}

// Unreachable reports whether npm's output says its registry could not be
// reached.
func Unreachable(out string) bool {
	for _, c := range networkCodes {
		if strings.Contains(out, c) {
			return true
		}
	}
	return false
}
