package sessionstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	// The pure-Go SQLite driver, registered as "sqlite".
	_ "modernc.org/sqlite"
)

// sqliteBusyMillis is how long a statement waits for another process's write
// lock before failing with SQLITE_BUSY.
const sqliteBusyMillis = 5000

// OpenSQLite opens (creating if needed) the SQLite store at path with the
// 32-byte secrets key. The database runs in WAL mode with a busy timeout,
// and the pool holds one connection: SQLite has one writer at a time, and
// serializing in the pool beats retrying SQLITE_BUSY. Transactions begin
// IMMEDIATE so a second process waits instead of failing an upgrade.
func OpenSQLite(ctx context.Context, path string, key []byte) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: path is empty")
	}
	// The driver splits its parameters at the first '?'.
	if strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("sqlite: path %q: must not contain '?'", path)
	}
	dsn := path + fmt.Sprintf("?_pragma=busy_timeout(%d)&_pragma=journal_mode(wal)&_pragma=synchronous(normal)&_pragma=foreign_keys(1)&_txlock=immediate", sqliteBusyMillis)
	s, err := open(ctx, sqliteDialect, dsn, key)
	if err != nil {
		return nil, err
	}
	// Locks are keyed by the file, whichever way its path was spelled.
	if s.file, err = filepath.Abs(path); err != nil {
		_ = s.db.Close()
		return nil, fmt.Errorf("sqlite: path: %w", err)
	}
	return s, nil
}

var sqliteDialect = dialect{
	name:        "sqlite",
	driver:      "sqlite",
	placeholder: "?",
	hasColumn:   "SELECT count(*) FROM pragma_table_info($1) WHERE name = $2",
	configure: func(db *sql.DB) {
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		db.SetConnMaxLifetime(0)
	},
}
