package memory

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rcm-dev/rcm/transcript"
)

// crashRecord is the i-th record the write loop stores: large enough that a
// commit spans several pages.
func crashRecord(i int) Record {
	exit := i % 3
	return Record{
		Task:         fmt.Sprintf("t%06d", i),
		Requirements: []Requirement{{Text: strings.Repeat(fmt.Sprintf("requirement %d. ", i), 200), Turn: "00"}},
		Commands:     []Command{{Cmd: "go test ./...", Exit: &exit}},
		Progress:     []string{strconv.Itoa(i)},
		Updated:      time.Unix(int64(i), 0).UTC(),
	}
}

// writeLoop stores crashRecord(i) for i from the number of records already
// present upwards, with labels and events alongside, printing i once the
// write returned (is on disk). It runs until killed.
func writeLoop(path string) {
	s, err := Open(path, Options{MaxEvents: 50})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(5)
	}
	recs, err := s.Records("s")
	if err != nil {
		fmt.Println("records:", err)
		os.Exit(6)
	}
	fps := make([]transcript.Fingerprint, 64)
	labels := make([]Label, len(fps))
	for i := len(recs); ; i++ {
		for j := range fps {
			fps[j] = transcript.Fingerprint{byte(i), byte(i >> 8), byte(j)}
			labels[j] = Label{Task: "t", Confidence: 0.9, Method: "lexical"}
		}
		if err := s.putLabels("s", fps, labels); err != nil {
			fmt.Println("labels:", err)
			os.Exit(7)
		}
		if err := s.appendEvent("s", Event{Task: "t", Kind: "agent"}); err != nil {
			fmt.Println("event:", err)
			os.Exit(8)
		}
		if err := s.putRecord("s", crashRecord(i)); err != nil {
			fmt.Println("record:", err)
			os.Exit(9)
		}
		fmt.Println(i)
	}
}

// TestKillDuringWrites SIGKILLs a process writing records in a loop, several
// times, and checks after each kill that the store opens, every record
// decodes, and the records are exactly a prefix of those written,
// including every write that had returned.
func TestKillDuringWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rcm.db")
	for round, killAfter := range []int{7, 13, 22} {
		cmd := helperCmd("write", path)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		acked, seen := -1, 0
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			i, err := strconv.Atoi(sc.Text())
			if err != nil {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("round %d: helper said %q", round, sc.Text())
			}
			acked = i
			if seen++; seen == killAfter {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
			t.Fatalf("round %d: helper ended with %v, want killed", round, err)
		}

		s, err := Open(path, Options{})
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v", round, err)
		}
		recs, err := s.Records("s")
		if err != nil {
			t.Fatalf("round %d: records after kill: %v", round, err)
		}
		if _, err := s.Events("s", 0); err != nil {
			t.Fatalf("round %d: events after kill: %v", round, err)
		}
		s.Close()
		// Every returned write is there, and at most the one in flight more.
		if len(recs) < acked+1 || len(recs) > acked+2 {
			t.Fatalf("round %d: %d records after %d acknowledged writes", round, len(recs), acked+1)
		}
		for i, r := range recs {
			want := crashRecord(i)
			want.Version = 1
			if !reflect.DeepEqual(r, want) {
				t.Fatalf("round %d: record %d = %+v, want %+v", round, i, r.Task, want.Task)
			}
		}
	}
}
