package memory

import (
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultPageSize is the number of sessions a page holds when the caller
// names none.
const DefaultPageSize = 50

// ErrCursor means a page cursor that this store did not hand out.
var ErrCursor = errors.New("bad page cursor")

// SessionPage returns up to limit sessions (DefaultPageSize when limit <=
// 0), most recently used first (ties by id), starting after the position
// the cursor after names ("" starts at the newest). next is the cursor of
// the following page, "" after the last one.
//
// A cursor is a position in that order, not a snapshot: a session used
// between two pages moves to the front and is not listed again on later
// pages. On bbolt each page reads every session's entry (one read
// transaction), so its cost grows with the number of sessions the store
// keeps; PostgreSQL reads the page from an index.
func (s *Store) SessionPage(limit int, after string) (page []Session, next string, err error) {
	if limit <= 0 {
		limit = DefaultPageSize
	}
	var from *Session
	if after != "" {
		c, err := decodeCursor(after)
		if err != nil {
			return nil, "", fmt.Errorf("memory: sessions: %w", err)
		}
		from = &c
	}
	all, err := s.b.page(limit+1, from)
	if err != nil {
		return nil, "", fmt.Errorf("memory: sessions: %w", err)
	}
	if len(all) > limit {
		all = all[:limit]
		next = encodeCursor(all[limit-1])
	}
	return all, next, nil
}

// sessionOrder sorts by last use, newest first, then by id.
func sessionOrder(a, b Session) int {
	if c := b.Updated.Compare(a.Updated); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// A cursor is the last listed session's position: its Updated time in Unix
// nanoseconds and its id, base64url-encoded so that it travels in a query.
func encodeCursor(s Session) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(s.Updated.UnixNano(), 10) + ":" + s.ID))
}

func decodeCursor(c string) (Session, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return Session{}, fmt.Errorf("%w %q", ErrCursor, c)
	}
	ns, id, ok := strings.Cut(string(raw), ":")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || id == "" {
		return Session{}, fmt.Errorf("%w %q", ErrCursor, c)
	}
	return Session{ID: id, Updated: time.Unix(0, n)}, nil
}
