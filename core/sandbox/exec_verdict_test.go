package sandbox

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestTimedOut(t *testing.T) {
	t.Parallel()
	const d = 2 * time.Second
	tests := []struct {
		name string
		ev   ExecEvidence
		want bool
	}{
		{name: "no deadline, long run", ev: ExecEvidence{Finished: time.Hour}},
		{name: "no deadline, enforced", ev: ExecEvidence{Enforced: true}},
		{name: "normal exit inside the deadline", ev: ExecEvidence{Deadline: d, Finished: d / 2}},
		{name: "exit 124 inside the deadline", ev: ExecEvidence{Deadline: d, ExitCode: 124, Finished: time.Second}},
		{name: "SIGKILLed itself inside the deadline", ev: ExecEvidence{Deadline: d, ExitCode: 137, Finished: 10 * time.Millisecond}},
		{name: "finished just before the deadline", ev: ExecEvidence{Deadline: d, Finished: d - time.Nanosecond}},
		{name: "killed by the watchdog", ev: ExecEvidence{Deadline: d, ExitCode: 137, Finished: d + 20*time.Millisecond}, want: true},
		{name: "finished exactly at the deadline", ev: ExecEvidence{Deadline: d, Finished: d}, want: true},
		{name: "killed the watchdog, exited 0 late", ev: ExecEvidence{Deadline: d, Finished: d + 300*time.Millisecond}, want: true},
		{name: "enforced by the adapter", ev: ExecEvidence{Deadline: d, ExitCode: 137, Finished: d + EnforceGrace, Enforced: true}, want: true},
		{name: "enforced, exit code forged to 0", ev: ExecEvidence{Deadline: d, Enforced: true}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, timedOut(tt.ev))
		})
	}
}

func TestNeedsGroupCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code int
		want bool
	}{
		{code: -1}, {code: 0}, {code: 1}, {code: 124}, {code: 126}, {code: 127}, {code: 128},
		{code: 129, want: true}, {code: 137, want: true}, {code: 143, want: true}, {code: 192, want: true},
		{code: 193}, {code: 255}, {code: 256},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, NeedsGroupCheck(tt.code), "exit %d", tt.code)
	}
}

func TestNewExecResult(t *testing.T) {
	t.Parallel()
	small := func(s string) *Capture {
		c := NewCapture(4)
		_, _ = c.Write([]byte(s))
		return c
	}
	tests := []struct {
		name           string
		stdout, stderr *Capture
		ev             ExecEvidence
		want           ExecResult
	}{
		{
			name: "plain", stdout: small("out"), stderr: small("err"), ev: ExecEvidence{ExitCode: 3},
			want: ExecResult{Stdout: "out", Stderr: "err", ExitCode: 3},
		},
		{
			name: "stdout truncated", stdout: small("stdout"), stderr: small("e"),
			want: ExecResult{Stdout: "stdo", Stderr: "e", Truncated: true},
		},
		{
			name: "stderr truncated", stdout: small(""), stderr: small("stderr"),
			want: ExecResult{Stderr: "stde", Truncated: true},
		},
		{
			name: "timed out", stdout: small(""), stderr: small(""),
			ev:   ExecEvidence{Deadline: time.Second, ExitCode: ExitKilled, Finished: time.Second},
			want: ExecResult{ExitCode: 137, TimedOut: true},
		},
		{
			name: "nil captures", ev: ExecEvidence{ExitCode: 1},
			want: ExecResult{ExitCode: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, NewExecResult(tt.stdout, tt.stderr, tt.ev))
		})
	}
}
