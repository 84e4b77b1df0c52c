package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	cfs "github.com/cramfs/cramfs/fs"
)

// The GA4GH htsget 1.3 reads endpoint: GET /reads/{id}, id the path of a
// CRAM below the tree's root without .cram (/reads/sub/x for sub/x.cram),
// answered with a ticket whose URLs are byte ranges of the same BAM the
// tree serves (its header, the blocks the BAI or CSI gives for the region,
// the EOF block), so that a client concatenating them reads a BAM.
// Supported: format BAM, class header, referenceName (a name of the
// header, or * for the unplaced unmapped reads), start and end; fields,
// tags and notags are accepted and ignored (the reads come whole, as the
// spec allows), POST and service-info are not served.

// htsgetError is the error answer of the spec.
type htsgetError struct {
	status int
	kind   string // NotFound, InvalidInput, InvalidRange, UnsupportedFormat
	msg    string
}

func (h *Handler) htsgetFail(w http.ResponseWriter, e htsgetError) {
	w.Header().Set("Content-Type", "application/vnd.ga4gh.htsget.v1.3.0+json")
	w.WriteHeader(e.status)
	json.NewEncoder(w).Encode(map[string]any{"htsget": map[string]string{"error": e.kind, "message": e.msg}})
}

// htsgetURL is one URL of a ticket.
type htsgetURL struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Class   string            `json:"class,omitempty"`
}

// htsgetQuery is what a request asks for.
type htsgetQuery struct {
	header     bool   // class=header
	ref        string // "" for every read
	start, end int64  // end -1: to the reference's end
}

// parseHtsgetQuery reads and checks the query parameters of the spec.
func parseHtsgetQuery(v url.Values) (htsgetQuery, *htsgetError) {
	q := htsgetQuery{end: -1}
	if f := v.Get("format"); f != "" && f != "BAM" {
		return q, &htsgetError{http.StatusBadRequest, "UnsupportedFormat", fmt.Sprintf("format %q: this server serves BAM", f)}
	}
	switch c := v.Get("class"); c {
	case "", "body":
	case "header":
		q.header = true
	default:
		return q, &htsgetError{http.StatusBadRequest, "InvalidInput", fmt.Sprintf("class %q: want header or body", c)}
	}
	q.ref = v.Get("referenceName")
	for _, p := range []struct {
		name string
		to   *int64
	}{{"start", &q.start}, {"end", &q.end}} {
		s := v.Get(p.name)
		if s == "" {
			continue
		}
		if q.ref == "" || q.ref == "*" {
			return q, &htsgetError{http.StatusBadRequest, "InvalidInput", p.name + " needs a referenceName (not *)"}
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 || n > 1<<32 {
			return q, &htsgetError{http.StatusBadRequest, "InvalidInput", fmt.Sprintf("%s %q: want a number from 0 to 2^32", p.name, s)}
		}
		*p.to = n
	}
	if q.end >= 0 && q.start > q.end {
		return q, &htsgetError{http.StatusBadRequest, "InvalidRange", fmt.Sprintf("start %d is after end %d", q.start, q.end)}
	}
	return q, nil
}

// maxLinks bounds the links followed from an htsget id to its BAM.
const maxLinks = 8

// serveHtsget answers GET /reads/{id}.
func (h *Handler) serveHtsget(w http.ResponseWriter, r *http.Request, id string) {
	q, herr := parseHtsgetQuery(r.URL.Query())
	if herr != nil {
		h.htsgetFail(w, *herr)
		return
	}
	ctx := r.Context()
	p := id + ".bam"
	var e cfs.Entry
	var err error
	for range maxLinks {
		if e, err = h.tree.Lookup(ctx, p); err != nil || e.Kind != cfs.KindLink {
			break
		}
		p = e.Target
	}
	if err != nil || e.Kind != cfs.KindBAM {
		h.htsgetFail(w, htsgetError{http.StatusNotFound, "NotFound", fmt.Sprintf("no CRAM %s.cram", id)})
		return
	}
	f, e, err := h.tree.OpenBAM(ctx, e)
	if err != nil {
		h.fail(w, r, e.Path, err)
		return
	}
	urls, herr, err := h.ticket(ctx, r, f, e, q)
	switch {
	case herr != nil:
		h.htsgetFail(w, *herr)
		return
	case err != nil:
		h.fail(w, r, e.Path, err)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.ga4gh.htsget.v1.3.0+json")
	if r.Method == http.MethodHead {
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"htsget": map[string]any{"format": "BAM", "urls": urls}})
}

// ticket makes the URLs of the reads q asks for of the BAM f at e.
func (h *Handler) ticket(ctx context.Context, r *http.Request, f cfs.BAMFile, e cfs.Entry, q htsgetQuery) ([]htsgetURL, *htsgetError, error) {
	data := readerAt{ctx, f}
	size := f.Size()
	hdr, err := readBAMHeader(data, size)
	if err != nil {
		return nil, nil, err
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	u := scheme + "://" + r.Host + "/" + (&url.URL{Path: e.Path}).EscapedPath()
	headers := func(a, b int64) map[string]string {
		m := map[string]string{"Range": fmt.Sprintf("bytes=%d-%d", a, b-1)}
		if len(h.token) > 0 {
			m["Authorization"] = "Bearer " + string(h.token)
		}
		return m
	}
	urls := []htsgetURL{{URL: u, Headers: headers(0, hdr.end), Class: "header"}}
	if q.header {
		return urls, nil, nil
	}
	eof := size - 28
	ranges, herr, err := bodyRanges(data, f.Index(), hdr, q, eof)
	if herr != nil || err != nil {
		return nil, herr, err
	}
	for _, rg := range ranges {
		urls = append(urls, htsgetURL{URL: u, Headers: headers(rg[0], rg[1]), Class: "body"})
	}
	urls = append(urls, htsgetURL{URL: u, Headers: headers(eof, size), Class: "body"})
	return urls, nil, nil
}

// bodyRanges are the byte ranges [a, b) of the records q asks for, before
// the EOF block at eof.
func bodyRanges(data readerAt, idx []byte, hdr bamHeader, q htsgetQuery, eof int64) ([][2]int64, *htsgetError, error) {
	switch q.ref {
	case "":
		if hdr.end < eof {
			return [][2]int64{{hdr.end, eof}}, nil, nil
		}
		return nil, nil, nil
	case "*":
		// The unplaced reads follow every placed one: from the block of
		// the last placed record's end.
		cs, err := allChunks(idx)
		if err != nil {
			return nil, nil, err
		}
		from := hdr.end
		for _, c := range cs {
			from = max(from, int64(c.end>>16))
		}
		if from < eof {
			return [][2]int64{{from, eof}}, nil, nil
		}
		return nil, nil, nil
	}
	tid := -1
	for i, name := range hdr.refs {
		if name == q.ref {
			tid = i
			break
		}
	}
	if tid < 0 {
		return nil, &htsgetError{http.StatusNotFound, "NotFound", fmt.Sprintf("referenceName %q is not in the header", q.ref)}, nil
	}
	end := q.end
	if end < 0 {
		end = 1 << 32
	}
	cs, err := indexQuery(idx, tid, q.start, end)
	if err != nil {
		return nil, nil, err
	}
	var out [][2]int64
	for _, c := range cs {
		a, b := int64(c.beg>>16), int64(c.end>>16)
		if c.end&0xffff != 0 {
			n, err := bgzfBlockSize(data, b)
			if err != nil {
				return nil, nil, err
			}
			b += n
		}
		b = min(b, eof)
		if a >= b {
			continue
		}
		if n := len(out); n > 0 && a <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], b)
			continue
		}
		out = append(out, [2]int64{a, b})
	}
	return out, nil, nil
}
