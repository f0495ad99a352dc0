package agent

import "context"

type cutKey struct{}

// CutContext is the base context of a connection's requests: cut reports
// whether the connection was cut off (a daemon's relay died) rather than
// ended by its caller, which decides what a request whose caller is gone
// does with its command (exec.go's forward).
func CutContext(cut func() bool) context.Context {
	return context.WithValue(context.Background(), cutKey{}, cut)
}

// cutOff reports whether the connection of the request whose context ctx
// is was cut off.
func cutOff(ctx context.Context) bool {
	cut, _ := ctx.Value(cutKey{}).(func() bool)
	return cut != nil && cut()
}
