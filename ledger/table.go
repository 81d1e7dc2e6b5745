package ledger

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"text/tabwriter"
)

// WriteTable prints the report as an aligned table, largest resident
// line first, with the totals beneath.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "NAME\tCATEGORY\tBYTES\tRESIDENT\t% RSS\t")
	for _, e := range r.Entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", e.Name, e.Category, Human(e.Bytes), Human(e.Resident), r.pct(e.Resident))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nRSS %s, Pss %s (%s)\n", Human(r.RSSBytes), Human(r.PssBytes), r.Source)
	fmt.Fprintf(w, "attributed %s, unattributed %s (%.2f%% of RSS)\n", Human(r.AttributedBytes), Human(r.UnattributedBytes), 100*r.UnattributedShare)
	if r.PageCacheOnlyBytes > 0 {
		fmt.Fprintf(w, "mapped files hold another %s in the page cache, not in this process's RSS (not attributed)\n", Human(r.PageCacheOnlyBytes))
	}
	for _, m := range r.UnattributedMappings {
		fmt.Fprintf(w, "unregistered mapping: %s (%s resident)\n", m.Path, Human(m.Resident))
	}
	return nil
}

func (r *Report) pct(n int64) string {
	if r.RSSBytes <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", 100*float64(n)/float64(r.RSSBytes))
}

// Human formats a byte count with a binary unit.
func Human(n int64) string {
	sign, u := "", n
	if n < 0 {
		sign, u = "-", -n
	}
	switch {
	case u >= 1<<30:
		return fmt.Sprintf("%s%.2f GiB", sign, float64(u)/(1<<30))
	case u >= 1<<20:
		return fmt.Sprintf("%s%.2f MiB", sign, float64(u)/(1<<20))
	case u >= 1<<10:
		return fmt.Sprintf("%s%.1f KiB", sign, float64(u)/(1<<10))
	}
	return fmt.Sprintf("%s%d B", sign, u)
}

// Handler serves GET /debug/memory: the report as JSON, measured at each
// request.
func (l *Ledger) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(l.Report())
	})
}
