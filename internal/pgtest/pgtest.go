// Package pgtest gives integration tests a PostgreSQL database of their own
// on the server build/ensure-postgres.sh runs. A test without a server fails
// under CI=true and is skipped, with the reason, everywhere else.
package pgtest

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"strings"
	"testing"

	// pgx's database/sql driver, registered as "pgx".
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/sandgate/sandgate/core/domain"
)

// DSNEnv names the server's URL (`make integration` sets it).
const DSNEnv = "SANDGATE_TEST_POSTGRES_DSN"

// DSN returns the server's URL, or skips (fails under CI=true) without one.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(DSNEnv)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(DSNEnv + " is empty under CI=true: run build/ensure-postgres.sh (make postgres)")
		}
		t.Skip(DSNEnv + " is empty: run build/ensure-postgres.sh and export the DSN it prints")
	}
	return dsn
}

// Database creates a database for this test and returns its URL; it is
// dropped (with its connections) when the test ends, so runs never see each
// other's rows.
func Database(t testing.TB) string {
	t.Helper()
	dsn := DSN(t)
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatalf("postgres: %v", err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	name := "sandgate_test_" + strings.TrimPrefix(domain.NewID("db").String(), "db_")
	if _, err := admin.ExecContext(context.Background(), "CREATE DATABASE "+name); err != nil {
		t.Fatalf("the test server must answer and let us create a database: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("%s must be a postgres:// URL: %v", DSNEnv, err)
	}
	u.Path = "/" + name
	return u.String()
}
