package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/ports/portfake"
)

func TestMetaRoundTrip(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken})
	ctx := context.Background()
	c := e.client
	e.svc.Put(sid, "/w/d/f", []byte("hello"))

	fi, err := c.Stat(ctx, sid, "/w/d/f")
	require.NoError(t, err)
	require.Equal(t, sandbox.FileInfo{Name: "/w/d/f", Type: sandbox.TypeFile, Size: 5, Mode: 0o644, ModTime: portfake.ModTime}, fi)
	_, err = c.Stat(ctx, sid, "/w/missing")
	require.ErrorIs(t, err, sandbox.ErrFileNotExist)

	listing := []sandbox.FileInfo{
		{Name: "bad\xffname", Type: sandbox.TypeSymlink, Size: 3, Mode: 0o777, ModTime: time.Unix(1, 2).UTC(), LinkTarget: "t\xfe\nx"},
		{Name: "setuid", Type: sandbox.TypeFile, Mode: 0o4755, ModTime: time.Unix(3, 0).UTC()},
	}
	e.svc.Listing = listing
	got, err := c.ListDir(ctx, sid, "/w")
	require.NoError(t, err)
	require.Equal(t, listing, got, "names and targets byte for byte")
	e.svc.Listing = []sandbox.FileInfo{}
	got, err = c.ListDir(ctx, sid, "/")
	require.NoError(t, err)
	require.Empty(t, got)

	require.NoError(t, c.Remove(ctx, sid, "/w/d", true))
	require.Nil(t, e.svc.File(sid, "/w/d/f"))
	require.NoError(t, c.Remove(ctx, sid, "/w/x", false))
	require.NoError(t, c.Mkdir(ctx, sid, "/w/a/b", true))
	require.NoError(t, c.Mkdir(ctx, sid, "/w/c", false))
	require.Equal(t, []string{
		"stat ses_test /w/d/f", "stat ses_test /w/missing", "ls ses_test /w", "ls ses_test /",
		"rm ses_test /w/d -r", "rm ses_test /w/x", "mkdir ses_test /w/a/b -p", "mkdir ses_test /w/c",
	}, e.svc.Calls())
}

func TestMetaWire(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken})
	e.svc.Listing = []sandbox.FileInfo{{Name: "a\xff", Type: sandbox.TypeDir, Mode: 0o1777, ModTime: time.Unix(0, 0).UTC()}}
	a := e.do(t, http.MethodGet, "/v1/sessions/ses_test/files:list?path=/w", nil, nil)
	require.Equal(t, http.StatusOK, a.status)
	require.JSONEq(t, `{"entries":[{"name":"a\ufffd","name_base64":"Yf8=","type":"directory","size":0,"mode":"1777",
		"mod_time":"1970-01-01T00:00:00Z"}]}`, string(a.body))

	for _, tc := range []struct{ method, path, code string }{
		{http.MethodDelete, "/v1/sessions/ses_test/files?path=/w&recursive=maybe", CodeInvalidArgument},
		{http.MethodPost, "/v1/sessions/ses_test/files:mkdir?path=/w&parents=2", CodeInvalidArgument},
		{http.MethodGet, "/v1/sessions/bad id/files:stat?path=/w", CodeInvalidArgument},
		{http.MethodPut, "/v1/sessions/ses_test/files:stat?path=/w", CodeMethodNotAllowed},
		{http.MethodDelete, "/v1/sessions/ses_test/files:list?path=/w", CodeMethodNotAllowed},
	} {
		a := e.do(t, tc.method, tc.path, nil, nil)
		require.Equal(t, tc.code, a.code, "%s %s", tc.method, tc.path)
	}
	require.Equal(t, []string{"ls ses_test /w"}, e.svc.Calls(), "refused before the service")

	a = e.do(t, http.MethodDelete, "/v1/sessions/ses_test/files?path=/w&recursive=true", nil, nil)
	require.Equal(t, http.StatusNoContent, a.status)
	a = e.do(t, http.MethodPost, "/v1/sessions/ses_test/files:mkdir?path=/w&parents=true", nil, nil)
	require.Equal(t, http.StatusNoContent, a.status)
	require.Equal(t, "mkdir ses_test /w -p", e.svc.Calls()[2])
}

// The meta routes answer the service's errors like the other file routes.
func TestMetaErrors(t *testing.T) {
	t.Parallel()
	e := newAPI(t, APIOptions{Token: apiToken})
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{sandbox.ErrTooManyEntries, http.StatusRequestEntityTooLarge, CodeFileTooLarge},
		{sandbox.ErrIsDirectory, http.StatusUnprocessableEntity, CodeIsDirectory},
		{sandbox.ErrNotReplaceable, http.StatusUnprocessableEntity, CodeNotReplaceable},
		{sandbox.ErrNotFound, http.StatusNotFound, CodeNotFound},
	} {
		e.svc.Err = tc.err
		for _, route := range []struct{ method, path string }{
			{http.MethodGet, "files:stat"}, {http.MethodGet, "files:list"},
			{http.MethodDelete, "files"}, {http.MethodPost, "files:mkdir"},
		} {
			a := e.do(t, route.method, "/v1/sessions/ses_test/"+route.path+"?path=/w", nil, nil)
			require.Equal(t, tc.status, a.status, "%v %s", tc.err, route.path)
			require.Equal(t, tc.code, a.code)
			var body map[string]any
			require.NoError(t, json.Unmarshal(a.body, &body))
		}
	}
	e.svc.Err = nil
	_, err := e.client.ListDir(context.Background(), sid, "/w") // no Listing: file_not_exist
	require.ErrorIs(t, err, sandbox.ErrFileNotExist)
}
