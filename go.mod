module github.com/sandgate/sandgate

go 1.26
