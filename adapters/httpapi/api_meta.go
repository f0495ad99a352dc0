package httpapi

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/sandgate/sandgate/core/domain"
	"github.com/sandgate/sandgate/core/sandbox"
	"github.com/sandgate/sandgate/core/session"
)

// The routes of stat, list, remove and mkdir (C-FS-1..4). Their errors map
// like the other file routes'; a listing above sandbox.MaxListEntries is
// 413 file_too_large.

func (a *api) stat(w http.ResponseWriter, r *http.Request) {
	sid, err := sessionID(r)
	var fi sandbox.FileInfo
	if err == nil {
		fi, err = a.svc.Stat(r.Context(), sid, r.URL.Query().Get("path"))
	}
	a.reply(w, r, NewFileInfo(fi), err)
}

func (a *api) listDir(w http.ResponseWriter, r *http.Request) {
	sid, err := sessionID(r)
	var infos []sandbox.FileInfo
	if err == nil {
		infos, err = a.svc.ListDir(r.Context(), sid, r.URL.Query().Get("path"))
	}
	a.reply(w, r, NewFileList(infos), err)
}

func (a *api) remove(w http.ResponseWriter, r *http.Request) {
	sid, err := sessionID(r)
	recursive := false
	if err == nil {
		recursive, err = boolParam(r, "recursive")
	}
	if err == nil {
		err = a.svc.Remove(r.Context(), sid, r.URL.Query().Get("path"), recursive)
	}
	a.done(w, r, err)
}

func (a *api) mkdir(w http.ResponseWriter, r *http.Request) {
	sid, err := sessionID(r)
	parents := false
	if err == nil {
		parents, err = boolParam(r, "parents")
	}
	if err == nil {
		err = a.svc.Mkdir(r.Context(), sid, r.URL.Query().Get("path"), parents)
	}
	a.done(w, r, err)
}

// boolParam reads an optional boolean query parameter (strconv.ParseBool's
// spellings; absent is false).
func boolParam(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%w: %s: %q is not a boolean", session.ErrInvalidRequest, name, domain.Clip(v))
	}
	return on, nil
}
