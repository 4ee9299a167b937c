package store

import (
	"context"
	"strings"
	"testing"
)

// The database URL goes into the start-up log line and into connection
// errors: no password it carries may go with it, wherever libpq takes one.
func TestRedactHidesEveryPassword(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, url, want string }{
		{"in the user info", "postgres://ripcord:s3cret-pw@db:5432/ripcord", "postgres://ripcord:xxxxx@db:5432/ripcord"},
		{"as a parameter", "postgres://ripcord@db/ripcord?sslmode=require&password=s3cret-pw",
			"postgres://ripcord@db/ripcord?password=xxxxx&sslmode=require"},
		{"the client key's", "postgres://ripcord@db/ripcord?sslkey=/k&sslpassword=s3cret-pw",
			"postgres://ripcord@db/ripcord?sslkey=%2Fk&sslpassword=xxxxx"},
		{"in a URL that does not parse", "postgres://ripcord:s3cret-pw@db:port/ripcord", ""},
		{"in a keyword/value string", "host=db user=ripcord password=s3cret-pw dbname=ripcord",
			"host=db user=ripcord password=xxxxx dbname=ripcord"},
		{"quoted in a keyword/value string", "host=db sslpassword = 's3cret-pw and more' dbname=ripcord",
			"host=db sslpassword=xxxxx dbname=ripcord"},
		{"none", "postgres://ripcord@db/ripcord?sslmode=require", "postgres://ripcord@db/ripcord?sslmode=require"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := redact(c.url)
			if strings.Contains(got, "s3cret-pw") || (c.want != "" && got != c.want) {
				t.Errorf("redact(%q) = %q, want %q and no password", c.url, got, c.want)
			}
		})
	}
}

// A keyword/value string is refused at the start, named in the refusal,
// without its password.
func TestOpenRefusesAKeywordStringWithoutShowingItsPassword(t *testing.T) {
	t.Parallel()
	_, err := Open(context.Background(), "host=db user=ripcord password=s3cret-pw dbname=ripcord")
	if err == nil || strings.Contains(err.Error(), "s3cret-pw") || !strings.Contains(err.Error(), "not a database URL") {
		t.Errorf("Open = %v, want a refusal without the password", err)
	}
}
