package scripted

import "testing"

func TestTakeForgetsOneSession(t *testing.T) {
	srv, url := serve(t, Script{Default: Reply{Text: "ok"}})
	for _, s := range []string{"a", "b", "a", "c"} {
		post(t, url, body(false, false, "user:"+s), "x-session-id", s)
	}
	got := srv.Take("a")
	if len(got) != 2 || got[0].Session != "a" || got[1].Session != "a" {
		t.Fatalf("Take(a) = %+v", got)
	}
	if again := srv.Take("a"); len(again) != 0 {
		t.Errorf("second Take(a) = %d records, want 0", len(again))
	}
	rest := srv.Requests()
	if len(rest) != 2 || rest[0].Session != "b" || rest[1].Session != "c" {
		t.Errorf("left %+v, want b then c", rest)
	}
}
