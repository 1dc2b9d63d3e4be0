module github.com/mailroom/mailroom/interop/a2ago2

go 1.26

require github.com/a2aproject/a2a-go/v2 v2.3.1

require (
	github.com/google/uuid v1.6.0 // indirect
	golang.org/x/mod v0.33.0 // indirect
)
