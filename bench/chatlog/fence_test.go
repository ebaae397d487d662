package chatlog

import "testing"

// TestFence: fences open and close as CommonMark reads them, and a diff's
// fence closes only at a line of its own.
func TestFence(t *testing.T) {
	for _, c := range []struct {
		open, line string
		opens      bool
		closes     bool
	}{
		{"```", "```", true, true},
		{"```python", "```", true, true},
		{"````", "```", true, false},
		{"````", "`````", true, true},
		{"```", "```kotlin", true, false},
		{"```diff", "  ```", true, false},
		{"```diff", "```", true, true},
		{"    ```bash", "    ```", true, true},
		{"```\r", "```\r", true, true},
		{"``", "``", false, false},
		{"``` a`b", "```", false, false},
		{"~~~", "~~~", false, false},
		{"text", "```", false, false},
	} {
		f, ok := opening(c.open)
		if ok != c.opens || ok && f.closes(c.line) != c.closes {
			t.Errorf("%q then %q: opens %v, closes %v; want %v, %v", c.open, c.line, ok, ok && f.closes(c.line), c.opens, c.closes)
		}
	}
}
