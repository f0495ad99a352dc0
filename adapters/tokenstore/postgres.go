package tokenstore

import (
	"context"
	"database/sql"
	"time"

	// pgx's database/sql driver, registered as "pgx".
	_ "github.com/jackc/pgx/v5/stdlib"
)

// OpenPostgres opens the PostgreSQL store at dsn (a libpq URL or key=value
// string, handed to pgx) with the 32-byte secrets key, creating the schema
// under an advisory lock so executors starting together do not collide.
// Errors never contain the dsn, which may hold a password.
func OpenPostgres(ctx context.Context, dsn string, key []byte) (*Store, error) {
	return open(ctx, postgresDialect, dsn, key)
}

var postgresDialect = dialect{
	name:   "postgres",
	driver: "pgx",
	// The lock id is "sandgate" in ASCII, read as a big-endian int64.
	schemaLock: "SELECT pg_advisory_xact_lock(8314047764612871269)",
	configure: func(db *sql.DB) {
		db.SetMaxOpenConns(10)
		db.SetMaxIdleConns(5)
		db.SetConnMaxIdleTime(5 * time.Minute)
	},
}
