package sandbox

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox/shell"
)

func TestValidateExec(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		req     ExecRequest
		wantErr string // substring; "" = valid
	}{
		{name: "plain", req: ExecRequest{Command: "echo hi", Timeout: time.Second}},
		{name: "no timeout", req: ExecRequest{Command: "true"}},
		{name: "empty command", req: ExecRequest{}},
		{name: "longest command", req: ExecRequest{Command: strings.Repeat("x", MaxCommandBytes)}},
		{name: "hostile text", req: ExecRequest{Command: "echo '$(rm -rf /)'\n\"; `x`"}},
		{name: "negative timeout", req: ExecRequest{Command: "true", Timeout: -time.Nanosecond}, wantErr: "exec timeout -1ns: negative"},
		{name: "NUL byte", req: ExecRequest{Command: "echo a\x00b"}, wantErr: "exec command: NUL byte at offset 6"},
		{name: "too long", req: ExecRequest{Command: strings.Repeat("x", MaxCommandBytes+1)}, wantErr: "exec command: 131072 bytes, longer than the 131071"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := ValidateExec(tt.req)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalidExec)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestExecDeadline(t *testing.T) {
	t.Parallel()
	const maxWhole = maxDuration / time.Second * time.Second
	tests := []struct {
		in   time.Duration
		want time.Duration
	}{
		{in: -time.Second, want: 0},
		{in: 0, want: 0},
		{in: time.Nanosecond, want: time.Second},
		{in: time.Second, want: time.Second},
		{in: time.Second + time.Millisecond, want: 2 * time.Second},
		{in: 2*time.Second - time.Nanosecond, want: 2 * time.Second},
		{in: time.Hour, want: time.Hour},
		{in: maxWhole, want: maxWhole},
		{in: maxDuration, want: maxWhole}, // saturates instead of overflowing
	}
	for _, tt := range tests {
		t.Run(tt.in.String(), func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, ExecDeadline(tt.in))
			require.Equal(t, int64(tt.want/time.Second), deadlineSeconds(tt.in))
		})
	}
}

func TestExecArgv(t *testing.T) {
	t.Parallel()
	const cmd = "echo 'a b' \"$HOME\"\n$(x)"
	tests := []struct {
		name    string
		req     ExecRequest
		workdir string
		want    []string
	}{
		{
			name: "no timeout, backend sets the workdir", req: ExecRequest{Command: cmd},
			want: []string{"/bin/bash", "-c", shell.ExecWrapper, "sandgate-exec", "0", "", cmd},
		},
		{
			name: "no timeout, cd first", req: ExecRequest{Command: cmd}, workdir: "/work space",
			want: []string{"/bin/bash", "-c", shell.ExecWrapper, "sandgate-exec", "0", "/work space", cmd},
		},
		{
			name: "timeout rounds up", req: ExecRequest{Command: cmd, Timeout: 1500 * time.Millisecond},
			want: []string{"/bin/bash", "-c", shell.ExecWrapper, "sandgate-exec", "2", "", cmd},
		},
		{
			name: "timeout with a cd", req: ExecRequest{Command: cmd, Timeout: time.Nanosecond}, workdir: "-w",
			want: []string{"/bin/bash", "-c", shell.ExecWrapper, "sandgate-exec", "1", "-w", cmd},
		},
		{
			name: "negative timeout is no deadline", req: ExecRequest{Command: cmd, Timeout: -time.Second},
			want: []string{"/bin/bash", "-c", shell.ExecWrapper, "sandgate-exec", "0", "", cmd},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, ExecArgv(tt.req, tt.workdir))
		})
	}
}

func TestGroupArgv(t *testing.T) {
	t.Parallel()
	for _, pid := range []int{-1, 0, 1, maxPid + 1} {
		_, err := KillGroupArgv(pid)
		require.ErrorIs(t, err, ErrInvalidExec, "kill %d", pid)
		require.ErrorContains(t, err, "not a wrapper pid")
		_, err = GroupProbeArgv(pid)
		require.ErrorIs(t, err, ErrInvalidExec, "probe %d", pid)
	}
	kill, err := KillGroupArgv(42)
	require.NoError(t, err)
	require.Equal(t, []string{"/bin/bash", "-c", shell.KillGroup, "sandgate-kill", "42"}, kill)
	probe, err := GroupProbeArgv(maxPid)
	require.NoError(t, err)
	require.Equal(t, []string{"/bin/bash", "-c", shell.GroupProbe, "sandgate-probe", "4194304"}, probe)
}
